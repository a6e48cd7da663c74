//! A failed change never bricks the node (issue 23): every file-and-state operation is
//! all or nothing, sizes the file system cannot hold are refused with 400, a volume whose
//! file disagrees with its state comes up offline (the others serve), and a PATCH
//! repairs it. Failures are injected with real file systems (`small_fs`).

use std::collections::BTreeMap;
use std::path::Path;

use crate::api_util::{record_names, Api, POLICIES, VOLUMES};
use crate::small_fs::SmallFs;
use crate::util::{run, Node, TempDir};

/// ext4 with 4 KiB blocks: the largest file is 2^32 - 1 blocks.
const EXT4_MAX: u64 = (1 << 44) - 4096;

fn node_in(fs: &SmallFs) -> Node {
    Node::start_in(TempDir::new_in(&fs.mnt, "node"), "", &[])
}

fn api(n: &Node) -> Api {
    Api::new(&n.api_url())
}

/// What the API says: volume name → (size, state); user policy names.
fn listed(a: &Api) -> (BTreeMap<String, (u64, String)>, Vec<String>) {
    let v = a.get_ok(&format!("{VOLUMES}?fields=size,state"));
    let vols = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                (
                    r["size"].as_u64().unwrap(),
                    r["state"].as_str().unwrap().to_string(),
                ),
            )
        })
        .collect();
    let pols = record_names(&a.get_ok(&format!("{POLICIES}?builtin=false")));
    (vols, pols)
}

/// The volume files on disk: name → length (tombstones and other files included).
fn files(data: &Path) -> BTreeMap<String, u64> {
    std::fs::read_dir(data.join("volumes"))
        .unwrap()
        .flatten()
        .map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            (n, e.metadata().unwrap().len())
        })
        .collect()
}

/// State and files agree: one file per volume, of the volume's size, and nothing else.
fn assert_agree(n: &Node, what: &str) {
    let (vols, _) = listed(&api(n));
    let want: BTreeMap<String, u64> = vols
        .iter()
        .map(|(k, (size, _))| (format!("{k}.img"), *size))
        .collect();
    assert_eq!(files(&n.data_dir()), want, "{what}: files vs state");
    for (k, (_, state)) in &vols {
        assert_eq!(state, "online", "{what}: volume {k} is {state}");
    }
}

fn set_size_in_state_db(data: &Path, name: &str, size: u64) {
    let db = rusqlite::Connection::open(data.join("state.db")).unwrap();
    let n = db
        .execute(
            "UPDATE volumes SET size = ?1 WHERE name = ?2",
            rusqlite::params![size as i64, name],
        )
        .unwrap();
    assert_eq!(n, 1);
}

/// The issue's reproduction: a grow past ext4's 16 TiB file limit is refused with 400
/// naming the limit, nothing changes, and the node restarts; the exact limit is
/// accepted; a create at the documented 1 PiB maximum is refused and leaves no file.
#[test]
fn grow_past_the_file_system_limit_is_refused_and_the_node_restarts() {
    let fs = SmallFs::ext4(64);
    let mut n = node_in(&fs);
    assert!(
        n.ready_output()
            .iter()
            .any(|l| l.contains("ext4, largest volume 17592186040320 bytes (16 TiB - 4 KiB)")),
        "{:?}",
        n.ready_output()
    );
    let a = api(&n);
    a.create(VOLUMES, r#"{"name":"v","size":"1GiB"}"#);
    let r = a.req(
        "PATCH",
        &format!("{VOLUMES}?name=v"),
        Some(r#"{"size":"17TiB"}"#),
    );
    let msg = r.error(400, "size");
    assert!(
        msg.contains("17592186040320") && msg.contains("ext4"),
        "{msg}"
    );
    let r = a.req("POST", VOLUMES, Some(r#"{"name":"w","size":"1PiB"}"#));
    r.error(400, "size");
    assert_agree(&n, "after the refused changes");
    assert_eq!(files(&n.data_dir()).len(), 1, "no orphan file for w");
    // One byte more than the limit is refused, the limit itself works (sparse).
    let uuid = a.uuid_of(VOLUMES, "v");
    let r = a.req(
        "PATCH",
        &format!("{VOLUMES}/{uuid}"),
        Some(&format!(r#"{{"size":{}}}"#, EXT4_MAX + 1)),
    );
    r.error(400, "size");
    a.patch_ok(
        &format!("{VOLUMES}/{uuid}"),
        &format!(r#"{{"size":{EXT4_MAX}}}"#),
    );
    assert_agree(&n, "after growing to the limit");
    n.stop();
    n.start_again();
    assert_agree(&n, "after a restart");
    assert_eq!(listed(&api(&n)).0["v"].0, EXT4_MAX);
}

/// A state.db that holds a size the file system cannot hold (what the bug left behind)
/// and a file with data past its volume's size: the node starts, those volumes are
/// offline with their reasons, the others serve, and a PATCH brings each back.
#[test]
fn a_volume_that_disagrees_with_its_state_comes_up_offline_and_a_patch_repairs_it() {
    let fs = SmallFs::ext4(64);
    let mut n = node_in(&fs);
    let a = api(&n);
    for v in ["big", "long", "fine"] {
        a.create(VOLUMES, &format!(r#"{{"name":"{v}","size":"1MiB"}}"#));
    }
    n.stop();
    set_size_in_state_db(&n.data_dir(), "big", 17 << 40);
    // Data past the volume's end (as if the file were grown and written elsewhere).
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(n.volume_file("long"))
            .unwrap();
        f.write_all_at(b"data", (2 << 20) - 4).unwrap();
    }
    n.start_again();
    let out = n.ready_output().join("\n");
    assert!(out.contains("volume \"big\" is OFFLINE"), "{out}");
    assert!(out.contains("volume \"long\" is OFFLINE"), "{out}");
    let a = api(&n);
    let big = a.get_ok(&format!("{VOLUMES}?name=big&fields=state,offline_reason"));
    let rec = &big["records"][0];
    assert_eq!(rec["state"], "offline", "{big}");
    let why = rec["offline_reason"].as_str().unwrap();
    assert!(why.contains("17592186040320"), "{why}");
    // The others serve: nbdinfo reads the healthy volume; the offline one is not exported.
    let info = run(
        std::process::Command::new("nbdinfo").arg(n.uri("fine")),
        std::time::Duration::from_secs(20),
    );
    assert!(info.status.success(), "{}", info.stderr);
    let info = run(
        std::process::Command::new("nbdinfo").arg(n.uri("big")),
        std::time::Duration::from_secs(20),
    );
    assert!(
        !info.status.success(),
        "an offline volume is not exported: {}",
        info.stdout
    );
    // `long`: a size below its file's data is refused; its file's length brings it back.
    let long = a.uuid_of(VOLUMES, "long");
    a.req(
        "PATCH",
        &format!("{VOLUMES}/{long}"),
        Some(r#"{"size":"1MiB"}"#),
    )
    .error(400, "size");
    let r = a.patch_ok(&format!("{VOLUMES}/{long}"), r#"{"size":"2MiB"}"#);
    assert_eq!(r["state"], "online", "{r}");
    // `big`: any size its file's data fits in, within the limit.
    let big = a.uuid_of(VOLUMES, "big");
    let r = a.patch_ok(&format!("{VOLUMES}/{big}"), r#"{"size":"1GiB"}"#);
    assert_eq!(r["state"], "online", "{r}");
    assert_agree(&n, "after the repairs");
    n.stop();
    n.start_again();
    assert_agree(&n, "after a restart");
    assert!(!n.ready_output().join("\n").contains("OFFLINE"));
}

/// Status classes of one failed attempt at each operation.
fn attempt_all(a: &Api, tag: &str) -> Vec<(String, u16)> {
    let keep = a.uuid_of(VOLUMES, "keep");
    let pol = a.uuid_of(POLICIES, "p");
    let mut out = Vec::new();
    let mut send = |what: &str, method: &str, path: String, body: Option<String>| {
        let r = a.req(method, &path, body.as_deref());
        if r.status >= 500 {
            let j = r.json();
            let m = j["error"]["message"].as_str().unwrap_or("");
            assert!(m.contains("nothing was changed"), "{tag} {what}: {m}");
        }
        out.push((what.to_string(), r.status));
    };
    send(
        "create",
        "POST",
        VOLUMES.into(),
        Some(format!(r#"{{"name":"new_{tag}","size":"4MiB"}}"#)),
    );
    send(
        "grow",
        "PATCH",
        format!("{VOLUMES}/{keep}"),
        Some(r#"{"size":"64MiB"}"#.into()),
    );
    send(
        "policy change (re-places the flow)",
        "PATCH",
        format!("{VOLUMES}/{keep}"),
        Some(r#"{"qos":{"policy":{"name":"p"}}}"#.into()),
    );
    send(
        "create policy",
        "POST",
        POLICIES.into(),
        Some(format!(
            r#"{{"name":"q_{tag}","fixed":{{"max_throughput_iops":100}}}}"#
        )),
    );
    send(
        "rename policy",
        "PATCH",
        format!("{POLICIES}/{pol}"),
        Some(format!(
            r#"{{"name":"p_{tag}","fixed":{{"max_throughput_iops":200}}}}"#
        )),
    );
    send("delete", "DELETE", format!("{VOLUMES}?name=gone*"), None);
    out
}

fn setup(a: &Api) {
    a.create(VOLUMES, r#"{"name":"keep","size":"8MiB"}"#);
    a.create(VOLUMES, r#"{"name":"gone1","size":"8MiB"}"#);
    a.create(VOLUMES, r#"{"name":"gone2","size":"8MiB"}"#);
    a.create(
        POLICIES,
        r#"{"name":"p","fixed":{"max_throughput_iops":500}}"#,
    );
}

/// A full disk under every file-and-state operation: each fails with nothing changed
/// (500) or succeeds, and either way state and files agree, and the node restarts on
/// them with every volume online.
#[test]
fn a_full_disk_fails_each_operation_with_nothing_changed() {
    let fs = SmallFs::tmpfs(24);
    let mut n = node_in(&fs);
    let a = api(&n);
    setup(&a);
    let before = listed(&a);
    fs.fill();
    let got = attempt_all(&a, "full");
    for (what, status) in &got {
        assert!(
            *status >= 500,
            "{what} on a full disk answered {status}: {got:?}"
        );
    }
    assert_eq!(listed(&a), before, "a full disk changed the state: {got:?}");
    assert_agree(&n, "on a full disk");
    fs.unfill();
    n.stop();
    n.start_again();
    assert_eq!(listed(&api(&n)), before);
    assert_agree(&n, "after a restart");
    // With space again, the same operations succeed.
    let got = attempt_all(&api(&n), "free");
    assert!(got.iter().all(|(_, s)| *s < 300), "{got:?}");
    assert_agree(&n, "after the operations succeeded");
}

/// A read-only file system under the volume directory: creates and deletes (which go
/// through paths) fail with nothing changed; whatever succeeds is committed with its
/// file; state and files agree and the node restarts.
#[test]
fn a_read_only_volume_directory_fails_creates_and_deletes_with_nothing_changed() {
    let mut fs = SmallFs::tmpfs(64);
    let mut n = node_in(&fs);
    let a = api(&n);
    setup(&a);
    let before = listed(&a);
    fs.read_only(&n.data_dir().join("volumes"));
    let got = attempt_all(&a, "ro");
    let status = |w: &str| got.iter().find(|(x, _)| x == w).unwrap().1;
    assert!(status("create") >= 500, "{got:?}");
    assert!(status("delete") >= 500, "{got:?}");
    assert_agree(&n, "with the volume directory read-only");
    let (vols, _) = listed(&a);
    assert!(
        vols.contains_key("gone1") && !vols.contains_key("new_ro"),
        "{vols:?}"
    );
    let _ = before;
    fs.writable();
    n.stop();
    n.start_again();
    assert_agree(&n, "after a restart");
}
