//! Private by construction (issue 23): under umask 022 every file the node creates in its
//! data directory is 0600 and every directory 0700 — state.db and its -wal/-shm, volume
//! images, bucket objects and multipart uploads, TLS keys and certificates, users.json —
//! S3 secret keys are never shown by GET, and a data directory others can read is warned
//! about at start.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::api_util::{Api, VOLUMES};
use crate::s3_util::S3Node;
use crate::util::QOSLAB;

/// Every entry below `dir` with its mode (symbolic links and sockets skipped).
fn modes(dir: &Path, out: &mut Vec<(String, bool, u32)>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let m = e.path().symlink_metadata().unwrap();
        let mode = m.permissions().mode() & 0o777;
        if m.is_dir() {
            out.push((e.path().display().to_string(), true, mode));
            modes(&e.path(), out);
        } else if m.is_file() {
            out.push((e.path().display().to_string(), false, mode));
        }
    }
}

#[test]
fn every_file_the_node_creates_is_private_under_umask_022() {
    // SAFETY: sets this test process's creation mask, inherited by the node.
    unsafe { libc::umask(0o022) };
    let mut s3 = S3Node::start("", &["--nbd-tls", "on"]);
    let a = Api::new(&s3.node.api_url());
    a.create(VOLUMES, r#"{"name":"v","size":"1MiB"}"#);
    let out = s3.aws(&["s3", "mb", "s3://privy"]);
    assert!(out.status.success(), "{}", out.stderr);
    let obj = s3.node.scratch("obj");
    std::fs::write(&obj, b"secret data").unwrap();
    let out = s3.aws(&["s3", "cp", obj.to_str().unwrap(), "s3://privy/k"]);
    assert!(out.status.success(), "{}", out.stderr);
    let out = s3.aws(&[
        "s3api",
        "create-multipart-upload",
        "--bucket",
        "privy",
        "--key",
        "mp",
    ]);
    assert!(out.status.success(), "{}", out.stderr);
    let upload: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let id = upload["UploadId"].as_str().unwrap().to_string();
    let out = s3.aws(&[
        "s3api",
        "upload-part",
        "--bucket",
        "privy",
        "--key",
        "mp",
        "--part-number",
        "1",
        "--upload-id",
        &id,
        "--body",
        obj.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", out.stderr);
    // S3 users: GET shows the access key, never the secret.
    let services = a.get_ok("/api/protocols/s3/services?fields=*");
    let svm = services["records"][0]["svm"]["uuid"]
        .as_str()
        .unwrap()
        .to_string();
    let users = a.get_ok(&format!("/api/protocols/s3/services/{svm}/users?fields=*"));
    assert!(!users.to_string().contains("secret"), "{users}");
    let created = a.create(
        &format!("/api/protocols/s3/services/{svm}/users"),
        r#"{"name":"bob"}"#,
    );
    assert!(created.to_string().contains("secret_key"), "{created}");
    let bob = a.get_ok(&format!(
        "/api/protocols/s3/services/{svm}/users/bob?fields=*"
    ));
    assert!(!bob.to_string().contains("secret"), "{bob}");
    // An API user (users.json), written by the CLI under the same umask.
    let mut c = Command::new(QOSLAB)
        .args(["user", "create", "admin", "--password-stdin", "--data-dir"])
        .arg(s3.node.data_dir())
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(b"pw-admin\n").unwrap();
    assert!(c.wait().unwrap().success());
    let data = s3.node.data_dir();
    let mut all = Vec::new();
    modes(&data, &mut all);
    let names: Vec<&str> = all.iter().map(|(p, _, _)| p.as_str()).collect();
    for want in [
        "state.db",
        "state.db-wal",
        "state.db-shm",
        "volumes/v.img",
        "tls/server-key.pem",
        "tls/ca-cert.pem",
        "users.json",
        "upload.json",
        "buckets/privy/objects",
    ] {
        assert!(
            names.iter().any(|n| n.contains(want)),
            "{want} not among {names:?}"
        );
    }
    let loose: Vec<String> = all
        .iter()
        .filter(|(_, dir, mode)| *mode != if *dir { 0o700 } else { 0o600 })
        .map(|(p, d, m)| format!("{p} ({} {m:o})", if *d { "dir" } else { "file" }))
        .collect();
    assert!(loose.is_empty(), "not private: {loose:?}");
    let top = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(top, 0o700, "the data directory");
    // A data directory others can reach is warned about at start.
    s3.node.stop();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    s3.node.start_again();
    s3.refresh_endpoint();
    let err = s3.node.stderr();
    assert!(
        err.contains("has mode 0755: other users can reach it"),
        "{err}"
    );
}
