//! Permissions as a POSIX file server enforces them, checked against nfs-ganesha: the
//! same raw NFSv3 calls (read, write, create, remove, chmod, chown, ACCESS) by root, root
//! squashed, uid 1000, a group member, AUTH_NONE and an owner, on files and directories of
//! modes 0600, 0644, 0700 and 1777, go to a NAS volume of the node and to ganesha's export
//! of the same layout, side by side; every answer must be ganesha's.
//!
//! Cost: one node and one ganesha start (~2 s), ~400 calls each.

use std::collections::BTreeMap;
use std::os::unix::fs::{chown, PermissionsExt};
use std::path::Path;

use nfs_proto::nfs3::{self, proc_, StableHow};
use nfs_proto::rpc::Cred;
use nfs_proto::xdr::{put_opaque, put_u32, put_u64, Reader};

use crate::nfs_node::nfs_port;
use crate::nfs_peer::{Ganesha, GaneshaExport};
use crate::nfs_util::{sattr, sys_cred, Wire};
use crate::util::{Node, TempDir};

/// The group every laid-out object has; "group member" is in it.
const GROUP: u32 = 2000;
const MODES: [u32; 4] = [0o600, 0o644, 0o700, 0o1777];

/// One row of the matrix: who calls, through which export (root kept or squashed), on
/// objects owned by whom.
struct Row {
    name: &'static str,
    cred: Cred,
    squashed_export: bool,
    owner: u32,
}

fn rows() -> Vec<Row> {
    vec![
        Row {
            name: "root",
            cred: sys_cred(0, 0, &[]),
            squashed_export: false,
            owner: 0,
        },
        Row {
            name: "root squashed",
            cred: sys_cred(0, 0, &[]),
            squashed_export: true,
            owner: 0,
        },
        Row {
            name: "uid 1000",
            cred: sys_cred(1000, 1000, &[]),
            squashed_export: false,
            owner: 0,
        },
        Row {
            name: "group member",
            cred: sys_cred(1002, 1002, &[GROUP]),
            squashed_export: false,
            owner: 0,
        },
        Row {
            name: "AUTH_NONE",
            cred: Cred::None,
            squashed_export: false,
            owner: 0,
        },
        Row {
            name: "owner 1001",
            cred: sys_cred(1001, 1001, &[]),
            squashed_export: false,
            owner: 1001,
        },
    ]
}

fn set(p: &Path, mode: u32, uid: u32) {
    chown(p, Some(uid), Some(GROUP)).unwrap();
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Row `i`'s objects in `tree`: `rI/` (0755, root) holding, per mode M, a file `fM` and a
/// directory `dM` (with a file `victim`), all of the row's owner and group 2000.
fn lay_out(tree: &Path, i: usize, owner: u32) {
    let r = tree.join(format!("r{i}"));
    std::fs::create_dir(&r).unwrap();
    std::fs::set_permissions(&r, std::fs::Permissions::from_mode(0o755)).unwrap();
    for m in MODES {
        let f = r.join(format!("f{m:o}"));
        std::fs::write(&f, b"data").unwrap();
        set(&f, m, owner);
        let d = r.join(format!("d{m:o}"));
        std::fs::create_dir(&d).unwrap();
        let v = d.join("victim");
        std::fs::write(&v, b"v").unwrap();
        set(&v, 0o644, owner);
        set(&d, m, owner);
    }
}

/// One server under test: its NFS port and how its exports are mounted.
struct Server {
    nfs_port: u16,
    mnt_port: u16,
    /// MOUNT paths of the export that keeps root and of the one that squashes it.
    kept: String,
    squashed: String,
}

fn status_of(r: Result<(u32, Vec<u8>), u32>) -> String {
    match r {
        Ok((st, _)) => st.to_string(),
        Err(a) => format!("rpc {a}"),
    }
}

/// ACCESS asking every bit: its status and the bits granted.
fn access(w: &mut Wire, fh: &[u8]) -> String {
    let mut a = Vec::new();
    put_opaque(&mut a, fh);
    put_u32(&mut a, 0x3f);
    match w.nfs(proc_::ACCESS, &a) {
        Ok((0, body)) => {
            let mut r = Reader::new(&body);
            if r.bool("attrs").unwrap() {
                r.fixed(84, "fattr3").unwrap();
            }
            format!("0 bits {:#04x}", r.u32("access").unwrap())
        }
        other => status_of(other),
    }
}

/// Every answer of the matrix on `s`: "row | object | operation" -> status.
fn answers(s: &Server) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut root = Wire::connect(s.mnt_port);
    let roots = [root.mount(&s.kept), root.mount(&s.squashed)];
    let mut lookups = Wire::connect(s.nfs_port);
    for (i, row) in rows().into_iter().enumerate() {
        let export = &roots[row.squashed_export as usize];
        let dir = lookups.lookup(export, &format!("r{i}")).unwrap();
        let mut w = Wire::connect(s.nfs_port);
        w.cred = row.cred.clone();
        for m in MODES {
            let f = lookups.lookup(&dir, &format!("f{m:o}")).unwrap();
            let d = lookups.lookup(&dir, &format!("d{m:o}")).unwrap();
            let mut put = |op: &str, v: String| {
                out.insert(format!("{:<13} | {m:04o} | {op}", row.name), v);
            };
            put("access file", access(&mut w, &f));
            put("access dir", access(&mut w, &d));
            let mut a = Vec::new();
            put_opaque(&mut a, &f);
            put_u64(&mut a, 0);
            put_u32(&mut a, 4);
            put("read", status_of(w.nfs(proc_::READ, &a)));
            let mut a = Vec::new();
            nfs3::encode_write(&mut a, &f, 0, StableHow::FileSync, b"x");
            put("write", status_of(w.nfs(proc_::WRITE, &a)));
            let mut a = Vec::new();
            nfs3::encode_diropargs(&mut a, &d, b"new");
            put_u32(&mut a, 1); // GUARDED
            a.extend_from_slice(&sattr(Some(0o644), None, None, None));
            put("create", status_of(w.nfs(proc_::CREATE, &a)));
            let mut a = Vec::new();
            nfs3::encode_diropargs(&mut a, &d, b"victim");
            put("remove", status_of(w.nfs(proc_::REMOVE, &a)));
            for (op, attr) in [
                ("chmod 0640", sattr(Some(0o640), None, None, None)),
                ("chown 1002", sattr(None, Some(1002), None, None)),
            ] {
                let mut a = Vec::new();
                put_opaque(&mut a, &f);
                a.extend_from_slice(&attr);
                put_u32(&mut a, 0); // no guard
                put(op, status_of(w.nfs(proc_::SETATTR, &a)));
            }
        }
        // A name over 255 bytes: NFS3ERR_NAMETOOLONG, not GARBAGE_ARGS.
        let mut a = Vec::new();
        nfs3::encode_diropargs(&mut a, &dir, &[b'n'; 256]);
        out.insert(
            format!("{:<13} | ---- | lookup of a 256-byte name", row.name),
            status_of(w.nfs(proc_::LOOKUP, &a)),
        );
    }
    out
}

#[test]
fn permissions_answer_as_ganeshas() {
    let node = Node::start_with(
        r#"
[[export_policy]]
name = "kept"
rule = [{ clients = ["127.0.0.0/8"], superuser = ["sys"] }]

[[export_policy]]
name = "squashed"
rule = [{ clients = ["127.0.0.0/8"] }]

[[volume]]
name = "kept"
size = "64MiB"
nas_path = "/kept"
export_policy = "kept"

[[volume]]
name = "squashed"
size = "64MiB"
nas_path = "/squashed"
export_policy = "squashed"
"#,
        &["--listen-nfs", "127.0.0.1:0"],
    );
    let g = TempDir::new("nfs-matrix-ganesha");
    let (gk, gs) = (g.join("kept"), g.join("squashed"));
    for t in [&gk, &gs] {
        std::fs::create_dir(t).unwrap();
        std::fs::set_permissions(t, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let ours_kept = node.data_dir().join("nas/kept");
    let ours_squashed = node.data_dir().join("nas/squashed");
    for (i, row) in rows().iter().enumerate() {
        let (o, gt) = if row.squashed_export {
            (&ours_squashed, &gs)
        } else {
            (&ours_kept, &gk)
        };
        lay_out(o, i, row.owner);
        lay_out(gt, i, row.owner);
    }
    let ganesha = Ganesha::start(&[
        GaneshaExport {
            path: gk.clone(),
            root_squash: false,
        },
        GaneshaExport {
            path: gs.clone(),
            root_squash: true,
        },
    ]);
    let p = nfs_port(&node);
    let ours = answers(&Server {
        nfs_port: p,
        mnt_port: p,
        kept: "/kept".into(),
        squashed: "/squashed".into(),
    });
    let theirs = answers(&Server {
        nfs_port: ganesha.nfs_port,
        mnt_port: ganesha.mnt_port,
        kept: gk.display().to_string(),
        squashed: gs.display().to_string(),
    });
    let differ: Vec<String> = theirs
        .iter()
        .filter(|(k, v)| ours.get(*k) != Some(v))
        .map(|(k, v)| format!("{k}: qoslab {:?}, ganesha {v}", ours.get(k)))
        .collect();
    let table: Vec<String> = ours.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    eprintln!(
        "{} answers, all ganesha's:\n{}",
        ours.len(),
        table.join("\n")
    );
    assert!(
        differ.is_empty() && ours.len() == theirs.len(),
        "{} of {} answers differ from ganesha's:\n{}",
        differ.len(),
        theirs.len(),
        differ.join("\n")
    );
}
