//! `qoslab export-policy` through the real binary against a running node with
//! `--listen-nfs`: a policy created, attached to a NAS volume, and held at MOUNT and on
//! every call for libnfs's `nfs-ls`/`nfs-cp` from loopback; rules added and deleted;
//! deletion refused in use; bad flags named with their value before anything is sent.

use crate::api_cli::cli;
use crate::nfs_node::{nfs_tool, nfs_url};
use crate::util::{Node, TempDir};

/// A loopback client (libnfs connects from 127.0.0.1) outside a policy's match is refused
/// at MOUNT; a rule for it admits it, read-only when its rw_rule is `never`; the policy
/// cannot be deleted while the volume uses it, and can after.
#[test]
fn export_policy_cli_holds_a_nas_volumes_mounts() {
    let node = Node::start_with("", &["--listen-nfs", "127.0.0.1:0"]);
    let ok = |args: &[&str]| cli(&node, args).ok().stdout;
    // A policy that admits another loopback address only.
    let created = ok(&[
        "export-policy",
        "create",
        "lab",
        "--clients",
        "127.0.0.2,10.0.0.0/24",
        "--ro-rule",
        "sys",
    ]);
    assert!(
        created.contains("Export Policy Name: lab")
            && created.contains("127.0.0.2,10.0.0.0/24")
            && created.contains("read-write"),
        "{created}"
    );
    ok(&[
        "volume",
        "create",
        "nas1",
        "--size",
        "16MiB",
        "--nas-path",
        "/nas1",
        "--export-policy",
        "lab",
    ]);
    let list = ok(&["export-policy", "list"]);
    assert!(
        list.lines().any(|l| l.contains("lab")
            && l.contains("#1 127.0.0.2,10.0.0.0/24")
            && l.ends_with("nas1")),
        "{list}"
    );
    assert!(
        list.lines()
            .any(|l| l.contains("default") && l.contains("127.0.0.0/8,::1")),
        "{list}"
    );
    let url = nfs_url(&node, "/nas1");
    let refused = nfs_tool("nfs-ls", &[&url]);
    assert!(
        !refused.status.success() && refused.stderr.contains("nfs_service failed"),
        "127.0.0.1 is outside the policy (the node's only one): its connections are closed \
         at accept\n{refused}"
    );
    // Admit loopback read-only, as the first rule.
    let added = ok(&[
        "export-policy",
        "rule",
        "add",
        "lab",
        "--clients",
        "127.0.0.1",
        "--rw-rule",
        "never",
        "--index",
        "1",
    ]);
    assert!(added.contains("read-only"), "{added}");
    let ls = nfs_tool("nfs-ls", &[&url]);
    assert!(ls.status.success(), "admitted read-only: {ls}");
    let dir = TempDir::new("epcli");
    let local = dir.join("f");
    std::fs::write(&local, b"qoslab\n").unwrap();
    let write = nfs_tool(
        "nfs-cp",
        &[local.to_str().unwrap(), &nfs_url(&node, "/nas1/f")],
    );
    assert!(
        !write.status.success() && write.stderr.contains("NFS3ERR_ROFS"),
        "a read-only rule refuses writes: {write}"
    );
    // JSON shows the rules in order, as the API has them.
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["export-policy", "show", "lab", "--output", "json"])).unwrap();
    assert_eq!(
        json["rules"][0]["clients"][0]["match"], "127.0.0.1",
        "{json}"
    );
    assert_eq!(json["rules"][0]["rw_rule"][0], "never", "{json}");
    assert_eq!(json["rules"][1]["ro_rule"][0], "sys", "{json}");
    let id = json["id"].as_u64().expect("an id").to_string();
    // Rule 1 deleted: refused again, at once for a new mount.
    ok(&["export-policy", "rule", "delete", &id, "--index", "1"]);
    let again = nfs_tool("nfs-ls", &[&url]);
    assert!(
        !again.status.success() && again.stderr.contains("nfs_service failed"),
        "{again}"
    );
    // In use: refused; moved back to default: deleted, and gone.
    let busy = cli(&node, &["export-policy", "delete", "lab"]).refused();
    assert!(
        busy.stderr.contains("used by volume(s) nas1") && busy.stderr.contains("409"),
        "{busy}"
    );
    ok(&["volume", "modify", "nas1", "--export-policy", "default"]);
    assert!(nfs_tool("nfs-ls", &[&url]).status.success());
    let gone = ok(&["export-policy", "delete", "lab"]);
    assert!(gone.contains("deleted export policy lab"), "{gone}");
    let list = ok(&["export-policy", "list", "--output", "json"]);
    assert!(!list.contains("\"lab\""), "{list}");
    let missing = cli(&node, &["export-policy", "show", "lab"]).refused();
    assert!(
        missing.stderr.contains("no export policy named \"lab\""),
        "{missing}"
    );
    let default = cli(&node, &["export-policy", "delete", "default"]);
    assert!(
        default.status.code() == Some(2) && default.stderr.contains("cannot be deleted"),
        "{default}"
    );
}

/// Bad input names the flag and the value, exits 2, and creates nothing.
#[test]
fn export_policy_cli_errors_name_the_flag_and_value() {
    let node = Node::start("");
    for (args, says) in [
        (
            vec!["create", "p", "--clients", "10.0.0.0/33"],
            "--clients \"10.0.0.0/33\": client match \"10.0.0.0/33\": prefix \"33\" is not 0..=32",
        ),
        (
            vec!["create", "p", "--clients", "nfs.example.com"],
            "\"nfs.example.com\" is not an IP address",
        ),
        (
            vec!["create", "p", "--clients", "any", "--ro-rule", "krb5"],
            "--ro-rule \"krb5\": \"krb5\" is not supported (no Kerberos or NTLM here)",
        ),
        (
            vec!["create", "p", "--clients", "any", "--superuser", "root"],
            "--superuser \"root\": \"root\" is not one of any, sys or none",
        ),
        (
            vec!["create", "p", "--clients", "any", "--anon", "nobody"],
            "--anon \"nobody\": \"nobody\" is not a user id 0..65535",
        ),
        (
            vec!["create", "p", "--clients", "any", "--rw-rule", "ntlm,sys"],
            "--rw-rule \"ntlm,sys\"",
        ),
        (
            vec!["rule", "add", "default", "--ro-rule", "sys"],
            "--clients: give the clients",
        ),
        (
            vec!["rule", "delete", "default", "--index", "3"],
            "--index 3: the policy has 1 rule(s); give 1 to 1",
        ),
        (
            vec!["rule", "add", "nope", "--clients", "any"],
            "no export policy named \"nope\"",
        ),
        (
            vec!["modify", "default", "--new-name", "other"],
            "cannot be renamed",
        ),
    ] {
        let mut a = vec!["export-policy"];
        a.extend(&args);
        let out = cli(&node, &a);
        assert_eq!(out.status.code(), Some(2), "{a:?}: {out}");
        assert!(out.stderr.contains(says), "{a:?}: wanted {says:?}: {out}");
    }
    let list = cli(&node, &["export-policy", "list"]).ok().stdout;
    assert_eq!(list.lines().count(), 3, "only default: {list}");
}
