//! Issue 23's smaller items: an SVM named with a uuid another object gave it otherwise is a
//! 409 naming both, duplicate JSON keys are a 400, presigned URLs valid for more than 7
//! days are refused as AWS refuses them, SigV2 ones too (a plan's fio options: `bench_safety`).

use std::time::Duration;

use crate::api_util::{Api, POLICIES, VOLUMES};
use crate::s3_util::{require_boto3, S3Node};
use crate::util::Node;

const A: &str = "2829ebfb-4d6a-11e8-a5dc-005056b08451";
const B: &str = "11111111-2222-4333-8444-555555555555";

#[test]
fn svm_mismatch_is_409_and_duplicate_keys_are_400() {
    let n = Node::start("");
    let a = Api::new(&n.api_url());
    a.create(
        POLICIES,
        &format!(r#"{{"name":"p1","fixed":{{"max_throughput_iops":5}},"svm":{{"name":"nfs_svm","uuid":"{A}"}}}}"#),
    );
    // The same name with another uuid: refused, naming both; nothing is created.
    let r = a.req(
        "POST",
        POLICIES,
        Some(&format!(r#"{{"name":"p2","fixed":{{"max_throughput_iops":5}},"svm":{{"name":"nfs_svm","uuid":"{B}"}}}}"#)),
    );
    let msg = r.error(409, "svm.uuid");
    assert!(msg.contains(A) && msg.contains(B), "{msg}");
    let r = a.req(
        "POST",
        VOLUMES,
        Some(&format!(
            r#"{{"name":"v","size":"1MiB","svm":{{"name":"other","uuid":"{A}"}}}}"#
        )),
    );
    let msg = r.error(409, "svm.uuid");
    assert!(msg.contains("nfs_svm") && msg.contains("other"), "{msg}");
    // Consistent references are fine.
    a.create(
        VOLUMES,
        &format!(r#"{{"name":"v","size":"1MiB","svm":{{"name":"nfs_svm","uuid":"{A}"}}}}"#),
    );
    let svms = a.get_ok("/api/svm/svms?name=nfs_svm");
    assert_eq!(svms["records"][0]["uuid"], A, "{svms}");
    // Duplicate keys, top level and nested.
    let r = a.req(
        "POST",
        VOLUMES,
        Some(r#"{"name":"d1","name":"d2","size":"1MiB"}"#),
    );
    let msg = r.error(400, "");
    assert!(msg.contains("duplicate key \"name\""), "{msg}");
    let r = a.req(
        "PATCH",
        &format!("{VOLUMES}?name=v"),
        Some(r#"{"qos":{"policy":{"name":"p1","name":"none"}}}"#),
    );
    assert!(r.error(400, "").contains("duplicate key"));
    assert_eq!(a.get_ok(VOLUMES)["num_records"], 1);
}

#[test]
fn presigned_urls_over_seven_days_are_refused_as_aws_does() {
    require_boto3();
    let s3 = S3Node::start("", &[]);
    let out = s3.python("presign_expires.py", &[], Duration::from_secs(120));
    assert!(out.status.success(), "{}\n{}", out.stdout, out.stderr);
}
