//! S3 users and buckets through the REST API (ONTAP's shapes) and `qoslab s3`: keys made,
//! regenerated and deleted take effect at once for S3 clients; buckets keep their QoS
//! policy across a restart; bad requests get ONTAP-shaped errors.

use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::api_util::{Api, POLICIES};
use crate::s3_util::S3Node;
use crate::util::{run, QOSLAB};

const CONFIG: &str = r#"
[[policy]]
name = "gold"
fixed.max_throughput = "1000iops"
"#;

fn cli(n: &S3Node, args: &[&str]) -> Value {
    let mut c = Command::new(QOSLAB);
    c.arg("s3")
        .args(args)
        .args(["--url", &n.node.api_url(), "--output", "json"]);
    let out = run(&mut c, Duration::from_secs(30)).ok();
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

/// `aws s3 ls` with these keys: Ok(stdout) or Err(stderr).
fn ls_with(n: &S3Node, access: &str, secret: &str) -> Result<String, String> {
    let mut c = Command::new("aws");
    c.args(["--endpoint-url", &n.endpoint, "s3", "ls"]);
    n.env(&mut c);
    c.env("AWS_ACCESS_KEY_ID", access)
        .env("AWS_SECRET_ACCESS_KEY", secret);
    let o = run(&mut c, Duration::from_secs(60));
    if o.status.success() {
        Ok(o.stdout)
    } else {
        Err(o.stderr)
    }
}

#[test]
fn users_and_buckets_through_api_and_cli() {
    let _g = crate::util::heavy();
    let mut n = S3Node::start(CONFIG, &[]);
    // Users: keys shown once, working at once, regenerated, deleted.
    let k = cli(&n, &["user", "create", "alice", "--comment", "test user"]);
    let rec = &k["records"][0];
    let (a1, s1) = (
        rec["access_key"].as_str().unwrap(),
        rec["secret_key"].as_str().unwrap(),
    );
    assert_eq!(a1.len(), 20);
    ls_with(&n, a1, s1).expect("alice's new keys");
    let users = cli(&n, &["user", "list"]);
    let alice = users["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "alice")
        .unwrap();
    assert_eq!(alice["access_key"], a1);
    assert!(
        alice.get("secret_key").is_none(),
        "a listing shows no secret: {alice}"
    );
    let k2 = cli(&n, &["user", "modify", "alice", "--regenerate-keys"]);
    let rec2 = &k2["records"][0];
    let (a2, s2) = (
        rec2["access_key"].as_str().unwrap(),
        rec2["secret_key"].as_str().unwrap(),
    );
    assert!(ls_with(&n, a1, s1)
        .unwrap_err()
        .contains("InvalidAccessKeyId"));
    ls_with(&n, a2, s2).expect("regenerated keys");

    // Buckets: under a policy, moved off it, refused when wrong.
    let b = cli(
        &n,
        &[
            "bucket",
            "create",
            "gold-bucket",
            "--qos-policy",
            "gold",
            "--size",
            "10GB",
        ],
    );
    assert_eq!(b["qos_policy"]["name"], "gold", "{b}");
    assert_eq!(b["qos_policy"]["max_throughput_iops"], 1000, "{b}");
    assert_eq!(b["size"], 10_000_000_000u64);
    assert!(ls_with(&n, a2, s2).unwrap().contains("gold-bucket"));
    n.cp("/etc/hostname", "s3://gold-bucket/h");
    let api = Api::new(&n.node.api_url());
    let svm = api.get_ok("/api/protocols/s3/services?fields=svm")["records"][0]["svm"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    // The S3 service is on the node's default SVM, as /api/svm/svms reports it.
    let svms = api.get_ok("/api/svm/svms");
    assert!(
        svms["records"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["uuid"] == svm.as_str() && s["name"] == "qoslab"),
        "{svms}"
    );
    let buckets = format!("/api/protocols/s3/services/{svm}/buckets");
    let r = api.req(
        "POST",
        &buckets,
        Some(r#"{"name": "x", "qos_policy": {"name": "gold"}}"#),
    );
    assert!(r.error(400, "name").contains("invalid bucket name"));
    let r = api.req(
        "POST",
        &buckets,
        Some(r#"{"name": "other", "qos_policy": {"name": "nope"}}"#),
    );
    assert_eq!(r.status, 404, "{r:?}");
    let r = api.req("POST", &buckets, Some(r#"{"name": "gold-bucket"}"#));
    assert_eq!(r.status, 409, "{r:?}");
    let r = api.req(
        "POST",
        &buckets,
        Some(r#"{"name": "limits-only", "qos_policy": {"max_throughput_iops": 5}}"#),
    );
    assert!(r
        .error(400, "qos_policy.name")
        .contains("qoslab does not generate policies"));
    let r = api.req("POST", &buckets, Some(r#"{"name": "typo", "sise": 5}"#));
    r.error(400, "sise");
    let r = api.req(
        "GET",
        "/api/protocols/s3/services/not-the-svm/buckets",
        None,
    );
    r.error(404, "svm.uuid");
    let gold_uuid = api.uuid_of(POLICIES, "gold");
    let r = api.req("DELETE", &format!("{POLICIES}/{gold_uuid}"), None);
    assert!(
        r.error(409, "uuid").contains("gold-bucket"),
        "policy in use by a bucket"
    );
    let bu = b["uuid"].as_str().unwrap();
    let r = api.req("DELETE", &format!("{buckets}/{bu}"), None);
    assert!(r.error(409, "uuid").contains("not empty"));

    // Everything survives a restart: users, buckets, policies, objects.
    n.node.stop();
    n.node.start_again();
    n.refresh_endpoint();
    ls_with(&n, a2, s2).expect("keys after restart");
    let b = cli(&n, &["bucket", "show", "gold-bucket"]);
    assert_eq!(b["qos_policy"]["name"], "gold", "{b}");
    assert_eq!(b["object_count"], 1, "{b}");
    let b = cli(
        &n,
        &["bucket", "modify", "gold-bucket", "--qos-policy", "none"],
    );
    assert!(b.get("qos_policy").is_none(), "{b}");
    n.aws(&["s3", "rm", "--only-show-errors", "s3://gold-bucket/h"])
        .ok();
    cli(&n, &["bucket", "delete", "gold-bucket"]);
    cli(&n, &["user", "delete", "alice"]);
    assert!(ls_with(&n, a2, s2)
        .unwrap_err()
        .contains("InvalidAccessKeyId"));
    assert!(!n.bucket_dir().join("gold-bucket").exists());
}
