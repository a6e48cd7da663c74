//! Run a tenants plan's sweep on an embedded node and print the summary rows as JSON lines
//! (a development tool until `qoslab bench` runs the tenants family):
//! `cargo run --release -p tenants --example sweep_plan -- PLAN.toml`

use bench::target::EmbeddedNode;
use storage_node::NodeConfig;
use tenants::rows::{summary_rows, SUMMARY_COLUMNS};
use tenants::spec::{RawClass, RawTenants, TenantsSpec};
use tenants::sweep::Sweep;
use tenants::verdicts::judge;

/// The plan's node tables ([capacity], [[policy]], [[volume]]) as node.toml text.
fn node_part(text: &str) -> String {
    let mut keep = false;
    let mut out = String::new();
    for l in text.lines() {
        let t = l.trim();
        if t.starts_with('[') {
            keep = ["[capacity]", "[[policy]]", "[[volume]]"]
                .contains(&t.split('#').next().unwrap_or("").trim());
        }
        if keep {
            out.push_str(l);
        }
        out.push('\n');
    }
    out
}

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("usage: sweep_plan PLAN.toml");
    let text = std::fs::read_to_string(&path).expect("reading the plan");
    #[derive(serde::Deserialize)]
    struct View {
        tenants: RawTenants,
        class: Vec<RawClass>,
    }
    #[derive(serde::Deserialize)]
    struct Loose {
        #[serde(flatten)]
        v: View,
        #[serde(flatten)]
        _rest: std::collections::BTreeMap<String, toml::Value>,
    }
    let v: Loose = toml::from_str(&text).expect("plan TOML");
    let cfg = NodeConfig::parse(&node_part(&text), &path).expect("node tables");
    let policies: Vec<String> = cfg.policies.iter().map(|p| p.name.clone()).collect();
    let spec = TenantsSpec::from_raw(&v.v.tenants, &v.v.class, &policies)
        .unwrap_or_else(|e| panic!("{e}"));
    let node = EmbeddedNode::start(&cfg).expect("embedded node");
    let scratch = std::env::temp_dir().join(format!("tenants-example-{}", std::process::id()));
    let sweep = Sweep::prepare(spec.clone(), &scratch).unwrap_or_else(|e| panic!("{e}"));
    println!("{}", serde_json::to_string(SUMMARY_COLUMNS).unwrap());
    for &n in &spec.points {
        let p = sweep.point(n, node.node(), node.socket());
        for r in summary_rows(&spec, &p) {
            println!("{}", serde_json::to_string(&r).unwrap());
        }
        for v in judge(&spec, &p) {
            println!(
                "verdict {} {} {}: {} worst {:.2} ({}) -> {}",
                v.tenants,
                v.class,
                v.kind,
                v.expected,
                v.worst,
                v.worst_tenant,
                if v.pass { "pass" } else { "FAIL" }
            );
        }
        for f in p.runs.iter().flat_map(|r| {
            r.iterations
                .iter()
                .filter_map(|i| i.failure.as_ref())
                .map(move |f| (r.tenant.clone(), f))
        }) {
            println!("failure {}: {}", f.0, f.1);
        }
    }
    sweep.close().expect("teardown");
    let _ = std::fs::remove_dir_all(&scratch);
}
