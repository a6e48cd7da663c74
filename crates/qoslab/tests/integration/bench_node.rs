//! `qoslab bench --node URL --volume NAME`: a volume on a running node, found through its
//! REST API (NBD URI and effective limits), measured with real fio.

use std::time::Duration;

use crate::bench_util::{export, qoslab, text, usage_error, Dir};
use crate::realtime::RealTime;
use crate::util::{heavy, one_volume_config, Node};

const LIMIT: Duration = Duration::from_secs(60);

/// The node: seed 000's `vol500` under `QoS_500iops`.
fn node_config() -> String {
    one_volume_config("QoS_500iops", "max_throughput_iops = 500", "vol500", "10GB")
}

fn plan(expect: &str) -> String {
    format!(
        r#"[bench]
name = "on-node"
runtime = "2s"
ramp = "1s"

[[workload]]
name = "randread"
fio = {{ rw = "randread", bs = "4k", iodepth = 16, size = "1G" }}
expect = ["{expect}"]
"#
    )
}

/// `qoslab bench PLAN --node URL --volume VOLUME --db r.db`'s arguments.
fn on_node<'a>(plan: &'a str, url: &'a str, volume: &'a str) -> Vec<&'a str> {
    vec![
        "bench", plan, "--node", url, "--volume", volume, "--db", "r.db",
    ]
}

/// A node of [`node_config`], its REST URL, and a directory named `name` whose `p.toml`
/// is [`plan`]`(expect)`.
fn node_and_plan(name: &str, expect: &str) -> (Node, String, Dir) {
    let node = Node::start(&node_config());
    let url = node.api_url();
    let d = Dir::new(name);
    d.write("p.toml", &plan(expect));
    (node, url, d)
}

#[test]
fn a_volume_on_a_running_node_is_measured_against_its_own_limits() {
    let _g = heavy();
    // Both verdicts are taken in real time: on a starved host the product calls a
    // shortfall inconclusive (exit 3, `starved-host` named), which the test's own
    // starved-host rule must confirm (docs/TESTING.md).
    let mut rt = RealTime::start();
    let mut judged = |o: &std::process::Output, want: (i32, &str), check: &str| -> String {
        let (out, err) = text(o);
        let code = o.status.code();
        let inconclusive = format!("INCONCLUSIVE {check}");
        if code == Some(want.0) {
            assert!(out.contains(&format!("{} {check}", want.1)), "{out}");
        } else if code == Some(3) && out.contains(&inconclusive) && out.contains("starved-host") {
            rt.short(format!("{check}: inconclusive, the host starved"));
        } else {
            panic!("want exit {} and {} {check}\n{out}\n{err}", want.0, want.1);
        }
        out
    };
    let (_node, url, d) = node_and_plan("node", "iops_mean ~= policy.ceiling +-3%");
    let args = on_node("p.toml", &url, "vol500");
    let o = qoslab(&d, &args, LIMIT);
    let out = judged(&o, (0, "PASS"), "iops_mean ~= policy.ceiling +-3%");
    assert!(out.contains("volume vol500 on node"), "{out}");

    // The stored run knows the node's limits for the volume.
    let o = export(&d, "1", "json", LIMIT);
    let (json, _) = text(&o);
    assert!(json.contains("\"ceiling_iops\": 500"), "{json}");

    // A wrong expectation against the same limits fails, naming the check.
    d.write("bad.toml", &plan("iops_mean >= policy.ceiling * 2"));
    let args = on_node("bad.toml", &url, "vol500");
    let o = qoslab(&d, &args, LIMIT);
    judged(&o, (1, "FAIL"), "iops_mean >= policy.ceiling * 2");
    rt.finish();
}

#[test]
fn a_node_on_https_with_basic_auth_is_reached_with_its_ca_and_user() {
    let _g = heavy();
    let node = Node::start_https(&node_config(), &[]);
    crate::ontap_rest::create_user(&node, "admin", "Netapp1!");
    let url = node.api_url();
    assert!(url.starts_with("https://"), "{url}");
    let d = Dir::new("node-https");
    d.write("p.toml", &plan("iops_mean ~= policy.ceiling +-3%"));
    let data = node.data_dir().display().to_string();
    let base = on_node("p.toml", &url, "vol500");
    // Trusting the node's CA (its data dir) with the user's password: measured and judged
    // against the limits read over HTTPS.
    let mut args = base.clone();
    args.extend(["--data-dir", &data, "-u", "admin:Netapp1!"]);
    let o = qoslab(&d, &args, LIMIT);
    let (out, err) = text(&o);
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("PASS iops_mean ~= policy.ceiling +-3%"),
        "{out}"
    );
    // Without credentials the node answers 401, and the run does not start.
    let mut args = base.clone();
    args.extend(["--data-dir", &data]);
    let err = usage_error(&d, &args, LIMIT);
    assert!(
        err.contains("401") || err.to_lowercase().contains("auth"),
        "{err}"
    );
    // Without trusting its certificate, the connection is refused as untrusted.
    let mut args = base.clone();
    args.extend(["-u", "admin:Netapp1!"]);
    let err = usage_error(&d, &args, LIMIT);
    assert!(err.to_lowercase().contains("certificate"), "{err}");
}

#[test]
fn an_unknown_volume_or_a_plan_with_node_tables_is_refused() {
    let (_node, url, d) = node_and_plan("node-err", "iops > 0");
    let args = on_node("p.toml", &url, "nope");
    let err = usage_error(&d, &args, LIMIT);
    assert!(err.contains("--volume \"nope\": no such volume"), "{err}");

    let with_tables = format!(
        "{}\n[[volume]]\nname = \"x\"\nsize = \"1GiB\"\n",
        plan("iops > 0")
    );
    d.write("t.toml", &with_tables);
    let args = on_node("t.toml", &url, "vol500");
    let err = usage_error(&d, &args, LIMIT);
    // --volume and the plan's own tables: one way or the other, and the error says which.
    assert!(
        err.contains("the plan declares its own [[policy]]/[[volume]] tables; drop --volume"),
        "{err}"
    );
}
