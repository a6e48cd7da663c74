//! Data-driven request validation: `check(json, expected)` where expected is `Ok` or the
//! error's (status, code, target).

use super::*;

fn err(status: u16, code: &'static str, target: &str) -> Result<(), (u16, &'static str, String)> {
    Err((status, code, target.to_string()))
}

fn outcome<T>(r: R<T>) -> Result<(), (u16, &'static str, String)> {
    r.map(|_| ()).map_err(|e| (e.status, e.code, e.target))
}

fn check_policy(body: &str, expect: Result<(), (u16, &'static str, String)>) {
    let got = outcome(parse_body(body.as_bytes()).and_then(|m| new_policy(&m)));
    assert_eq!(got, expect, "POST policy {body}");
}

fn check_volume(body: &str, expect: Result<(), (u16, &'static str, String)>) {
    let got = outcome(parse_body(body.as_bytes()).and_then(|m| new_volume(&m)));
    assert_eq!(got, expect, "POST volume {body}");
}

#[test]
fn policy_bodies() {
    use code::*;
    let seed1 = r#"{
  "fixed": {
    "capacity_shared": false,
    "max_throughput_iops": 500
  },
  "name": "QoS_500iops",
  "svm": {
    "name": "nfs_svm",
    "uuid": "2829ebfb-4d6a-11e8-a5dc-005056b08451"
  }
}"#;
    check_policy(seed1, Ok(()));
    check_policy(
        r#"{"fixed": {"capacity_shared": false, "max_throughput_mbps": 100}, "name": "QoS_100MBps"}"#,
        Ok(()),
    );
    check_policy(
        r#"{"name": "a", "adaptive": {"expected_iops": "5IOPS/GB", "peak_iops": "50IOPS/GB", "peak_iops_allocation": "allocated-space"}}"#,
        Ok(()),
    );
    check_policy(
        r#"{"name": "a", "adaptive": {"peak_iops": 4096, "block_size": "8k"}}"#,
        Ok(()),
    );
    check_policy("", err(400, INVALID_JSON, ""));
    check_policy("{", err(400, INVALID_JSON, ""));
    check_policy("[]", err(400, INVALID_TYPE, "body"));
    check_policy(r#"{"fixed": {}}"#, err(400, MISSING_FIELD, "name"));
    check_policy(r#"{"name": "a"}"#, err(400, MISSING_FIELD, "fixed"));
    check_policy(
        r#"{"name": "a", "colour": 1, "fixed": {}}"#,
        err(400, UNKNOWN_FIELD, "colour"),
    );
    check_policy(
        r#"{"name": "a", "fixed": {"max_iops": 5}}"#,
        err(400, UNKNOWN_FIELD, "fixed.max_iops"),
    );
    check_policy(
        r#"{"name": "a", "fixed": {"max_throughput_iops": "500"}}"#,
        err(400, INVALID_TYPE, "fixed.max_throughput_iops"),
    );
    check_policy(
        r#"{"name": "a", "fixed": {"max_throughput_iops": 1.5}}"#,
        err(400, INVALID_TYPE, "fixed.max_throughput_iops"),
    );
    check_policy(
        r#"{"name": "a", "fixed": {"max_throughput_iops": -1}}"#,
        err(400, OUT_OF_RANGE, "fixed.max_throughput_iops"),
    );
    check_policy(
        r#"{"name": "a", "fixed": {"max_throughput_iops": 3000000000}}"#,
        err(400, OUT_OF_RANGE, "fixed.max_throughput_iops"),
    );
    check_policy(
        r#"{"name": "a", "fixed": {"max_throughput_iops": 10, "min_throughput_iops": 20}}"#,
        err(400, OUT_OF_RANGE, "fixed.min_throughput_iops"),
    );
    check_policy(
        r#"{"name": "a", "fixed": {"capacity_shared": "no"}}"#,
        err(400, INVALID_TYPE, "fixed.capacity_shared"),
    );
    check_policy(
        r#"{"name": "a", "fixed": {}, "adaptive": {"peak_iops": 1}}"#,
        err(400, CONFLICT_FIELDS, "fixed"),
    );
    check_policy(
        r#"{"name": "a", "adaptive": {"expected_iops": 5}}"#,
        err(400, MISSING_FIELD, "adaptive.peak_iops"),
    );
    check_policy(
        r#"{"name": "a", "adaptive": {"peak_iops": "50IOPS/G"}}"#,
        err(400, OUT_OF_RANGE, "adaptive.peak_iops"),
    );
    check_policy(
        r#"{"name": "a", "adaptive": {"peak_iops": 0}}"#,
        err(400, OUT_OF_RANGE, "adaptive.peak_iops"),
    );
    check_policy(
        r#"{"name": "a", "adaptive": {"peak_iops": 10, "block_size": "3k"}}"#,
        err(400, OUT_OF_RANGE, "adaptive.block_size"),
    );
    check_policy(
        r#"{"name": "a", "adaptive": {"peak_iops": 10, "peak_iops_allocation": "all"}}"#,
        err(400, OUT_OF_RANGE, "adaptive.peak_iops_allocation"),
    );
    check_policy(
        r#"{"name": "-a", "fixed": {}}"#,
        err(400, OUT_OF_RANGE, "name"),
    );
    check_policy(
        r#"{"name": 5, "fixed": {}}"#,
        err(400, INVALID_TYPE, "name"),
    );
    check_policy(
        r#"{"name": "a", "svm": {"name": "s", "id": 1}, "fixed": {}}"#,
        err(400, UNKNOWN_FIELD, "svm.id"),
    );
}

#[test]
fn policy_patches() {
    use code::*;
    let fixed = Policy::Fixed(FixedPolicy {
        max_iops: 5000,
        ..Default::default()
    });
    let patch = |body: &str, cur: &Policy| {
        outcome(parse_body(body.as_bytes()).and_then(|m| patch_policy(&m, cur)))
    };
    assert_eq!(
        patch(r#"{"fixed": {"max_throughput_iops": 1000}}"#, &fixed),
        Ok(())
    );
    assert_eq!(patch(r#"{"name": "renamed"}"#, &fixed), Ok(()));
    assert_eq!(
        patch(r#"{"fixed": {"capacity_shared": true}}"#, &fixed),
        err(400, IMMUTABLE, "fixed.capacity_shared")
    );
    assert_eq!(
        patch(r#"{"fixed": {"capacity_shared": false}}"#, &fixed),
        Ok(())
    );
    assert_eq!(
        patch(r#"{"adaptive": {"peak_iops": 5}}"#, &fixed),
        err(400, IMMUTABLE, "adaptive")
    );
    assert_eq!(
        patch(r#"{"svm": {"name": "x"}}"#, &fixed),
        err(400, IMMUTABLE, "svm")
    );
    let m = parse_body(br#"{"fixed": {"max_throughput_mbps": 100}}"#).unwrap();
    let p = patch_policy(&m, &fixed).unwrap();
    assert_eq!(
        p.policy,
        Policy::Fixed(FixedPolicy {
            max_iops: 5000,
            max_mbps: 100,
            ..Default::default()
        }),
        "a PATCH merges into the current definition"
    );
}

#[test]
fn stored_form_round_trips() {
    let m = parse_body(
        br#"{"name": "a", "adaptive": {"expected_iops": "5IOPS/GB", "peak_iops": "50IOPS/GB", "peak_iops_allocation": "allocated-space", "block_size": "any"}}"#,
    )
    .unwrap();
    let p = new_policy(&m).unwrap().policy;
    let spec = Value::Object(policy_json(&p)).to_string();
    assert!(spec.contains("\"peak_iops\":50000"), "{spec}");
    assert!(
        !spec.contains("weight"),
        "default weight is not shown: {spec}"
    );
    assert_eq!(stored_policy(&spec).unwrap(), p);
    let m =
        parse_body(br#"{"name": "w", "fixed": {"min_throughput_iops": 10, "weight": 4}}"#).unwrap();
    let p = new_policy(&m).unwrap().policy;
    assert_eq!(p.weight(), 4);
    let spec = Value::Object(policy_json(&p)).to_string();
    assert!(spec.contains("\"weight\":4"), "{spec}");
    assert_eq!(stored_policy(&spec).unwrap(), p);
    for bad in [r#"{"weight": 0}"#, r#"{"weight": 10001}"#] {
        let body = format!(r#"{{"name": "w", "fixed": {bad}}}"#);
        let e = parse_body(body.as_bytes()).and_then(|m| new_policy(&m).map(|_| ()));
        assert!(
            matches!(&e, Err(ApiError { status: 400, .. })),
            "{bad}: {:?}",
            e.err()
        );
    }
}

#[test]
fn volume_bodies() {
    use code::*;
    check_volume(r#"{"name": "v", "size": 1073741824}"#, Ok(()));
    check_volume(
        r#"{"name": "v", "size": "100GB", "space": {"snapshot": {"reserve_percent": 0}}, "qos": {"policy": {"name": "p"}}, "svm": {"name": "s"}, "comment": "c", "state": "online"}"#,
        Ok(()),
    );
    check_volume(r#"{"size": 1}"#, err(400, MISSING_FIELD, "name"));
    check_volume(r#"{"name": "v"}"#, err(400, MISSING_FIELD, "size"));
    check_volume(
        r#"{"name": "v", "size": 0}"#,
        err(400, OUT_OF_RANGE, "size"),
    );
    check_volume(
        r#"{"name": "v", "size": -5}"#,
        err(400, OUT_OF_RANGE, "size"),
    );
    check_volume(
        r#"{"name": "v", "size": "10XB"}"#,
        err(400, OUT_OF_RANGE, "size"),
    );
    check_volume(
        r#"{"name": "v", "size": "2PiB"}"#,
        err(400, OUT_OF_RANGE, "size"),
    );
    check_volume(
        r#"{"name": "v", "size": true}"#,
        err(400, INVALID_TYPE, "size"),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "space": {"snapshot": {"reserve_percent": 91}}}"#,
        err(400, OUT_OF_RANGE, "space.snapshot.reserve_percent"),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "space": {"size": 5}}"#,
        err(400, UNKNOWN_FIELD, "space.size"),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "qos": {"policy": "p"}}"#,
        err(400, INVALID_TYPE, "qos.policy"),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "state": "offline"}"#,
        err(400, OUT_OF_RANGE, "state"),
    );
    // ONTAP scripts send these; one value each makes sense here.
    check_volume(
        r#"{"name": "v", "size": 1, "type": "rw", "style": "flexvol", "state": "online"}"#,
        Ok(()),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "type": "dp"}"#,
        err(400, OUT_OF_RANGE, "type"),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "style": "flexgroup"}"#,
        err(400, OUT_OF_RANGE, "style"),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "colour": "red"}"#,
        err(400, UNKNOWN_FIELD, "colour"),
    );
    // aggregates: accepted (ONTAP requires them), checked, not stored.
    check_volume(
        r#"{"name": "v", "size": 1, "aggregates": [{"name": "aggr1"}, {"uuid": "u"}]}"#,
        Ok(()),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "aggregates": "aggr1"}"#,
        err(400, INVALID_TYPE, "aggregates"),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "aggregates": [{"nam": "aggr1"}]}"#,
        err(400, UNKNOWN_FIELD, "aggregates[0].nam"),
    );
    check_volume(
        r#"{"name": "v", "size": 1, "aggregates": [{"name": 7}]}"#,
        err(400, INVALID_TYPE, "aggregates[0].name"),
    );
}

#[test]
fn volume_patches() {
    use code::*;
    let patch = |body: &str| outcome(parse_body(body.as_bytes()).and_then(|m| patch_volume(&m)));
    assert_eq!(patch(r#"{"size": "200GB"}"#), Ok(()));
    assert_eq!(patch(r#"{"name": "w"}"#), err(400, IMMUTABLE, "name"));
    let p = |body: &str| {
        patch_volume(&parse_body(body.as_bytes()).unwrap())
            .unwrap()
            .policy
    };
    assert_eq!(p(r#"{"qos": {"policy": null}}"#), Some(None));
    assert_eq!(p(r#"{"qos": {"policy": {"name": "none"}}}"#), Some(None));
    assert_eq!(p(r#"{"size": 5}"#), None);
    assert_eq!(
        p(r#"{"qos": {"policy": {"uuid": "u"}}}"#),
        Some(Some(PolicyRef {
            name: None,
            uuid: Some("u".into())
        }))
    );
}
