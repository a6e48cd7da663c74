//! A real sweep on an embedded qoslab node, as root: git and redis tenants on mounted
//! ext4 file systems, fio tenants on their volumes, two scale points; every tenant's
//! iterations recorded, the summary and tenant rows complete, nothing left mounted.

use bench::target::EmbeddedNode;
use storage_node::NodeConfig;
use tenants::rows::{summary_rows, tenant_rows, SUMMARY_COLUMNS};
use tenants::spec::{RawClass, RawTenants, TenantsSpec};
use tenants::sweep::Sweep;

#[test]
fn a_two_point_sweep_with_git_redis_and_fio_completes() {
    let base = std::env::temp_dir().join(format!("tenants-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let text = format!(
        r#"
[tenants]
points = [1, 2]
iterations = 2
timeout = "5m"
runtime = "3s"
ramp = "1s"
base_dir = "{b}/mounts"
cache_dir = "{b}/cache"

[[class]]
name = "src"
app = "git"
size = "256MiB"
git = {{ files = 300, bytes = "4MiB", seed = 4 }}

[[class]]
name = "kv"
app = "redis"
size = "256MiB"
redis = {{ records = 2000, operations = 4000, threads = 2 }}

[[class]]
name = "db"
app = "fio"
policy = "p300"
size = "64MiB"
"#,
        b = base.display()
    );
    #[derive(serde::Deserialize)]
    struct View {
        tenants: RawTenants,
        class: Vec<RawClass>,
    }
    let v: View = toml::from_str(&text).unwrap();
    let spec = TenantsSpec::from_raw(&v.tenants, &v.class, &["p300".into()]).unwrap();
    let cfg = NodeConfig::parse(
        "[[policy]]\nname = \"p300\"\nfixed = { max_throughput_iops = 300 }\n",
        "t",
    )
    .unwrap();
    let node = EmbeddedNode::start(&cfg).unwrap();
    let sweep = Sweep::prepare(spec.clone(), &base.join("scratch")).unwrap();
    let mut points = Vec::new();
    for &n in &spec.points {
        let p = sweep.point(n, node.node(), node.socket());
        assert!(p.teardown_errors.is_empty(), "{:?}", p.teardown_errors);
        points.push(p);
    }
    sweep.close().unwrap();
    assert!(mounts::sys::mounts_under(&base).is_empty());
    assert!(
        node.node().volumes().is_empty(),
        "every tenant volume was removed"
    );
    for p in &points {
        assert_eq!(p.runs.len(), 3 * p.tenants);
        for r in &p.runs {
            assert_eq!(r.iterations.len(), 2);
            for it in &r.iterations {
                assert!(it.ok(), "{} {}: {:?}", r.class, r.tenant, it.failure);
            }
        }
        let rows = summary_rows(&spec, p);
        assert_eq!(rows.len(), 3);
        let col = |r: &Vec<serde_json::Value>, c: &str| {
            r[SUMMARY_COLUMNS.iter().position(|x| *x == c).unwrap()].clone()
        };
        let db = rows.iter().find(|r| col(r, "class") == "db").unwrap();
        let iops = col(db, "max").as_f64().unwrap();
        assert!(
            iops <= 300.0 * 1.03 && iops > 250.0,
            "fio tenants held to 300 IOPS: {iops}"
        );
        assert_eq!(col(db, "ceiling_iops"), 300);
        let kv = rows.iter().find(|r| col(r, "class") == "kv").unwrap();
        assert!(col(kv, "load_ops_per_sec").as_f64().unwrap() > 0.0);
        let src = rows.iter().find(|r| col(r, "class") == "src").unwrap();
        assert!(col(src, "time_s").as_f64().unwrap() > 0.0);
        assert_eq!(tenant_rows(p).len(), 3 * p.tenants * 2);
    }
    let _ = std::fs::remove_dir_all(&base);
}
