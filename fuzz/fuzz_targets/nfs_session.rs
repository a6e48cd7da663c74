#![no_main]
//! The NFS service end to end on a real directory tree: each input is one NFSv3 call whose
//! procedure is chosen by the first byte and whose arguments are a real handle (the
//! export's root directory, or a file in it, by the first byte's top bit) followed by the
//! fuzzer's bytes. The reply must be one well-framed record; nothing may panic; nothing
//! outside the export may change (the tree lives in its own directory under a 64 MiB quota).
use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use nfs_proto::rpc::{self, AuthSys, Cred};
use nfs_proto::xdr::put_opaque;
use nfs_server::{Config, ExportSpec, Peer, Policy, Service};

struct World {
    svc: Arc<Service>,
    root: Vec<u8>,
    file: Vec<u8>,
}

fn world() -> &'static World {
    static W: OnceLock<World> = OnceLock::new();
    W.get_or_init(|| {
        // NFS_FUZZ_DIR (the caller removes it), else under /dev/shm: tmpfs, where the
        // namespace operations' directory fsyncs are free
        let dir = std::env::var_os("NFS_FUZZ_DIR")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| std::path::Path::new("/dev/shm").join(format!("qoslab-fuzz-nfs-{}", std::process::id())));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("d")).unwrap();
        std::fs::write(dir.join("f"), vec![7u8; 10000]).unwrap();
        let svc = Arc::new(Service::new(Config::default()).unwrap());
        let spec = ExportSpec { id: 1, path: "/vol".into(), root: dir.clone(), quota: Some(64 << 20), policy: Policy::default() };
        let ex = svc.add_export(spec).unwrap();
        let root = ex.tree.root_handle().encode().to_vec();
        let file = lookup_handle(&svc, &root, b"f");
        World { svc, root, file }
    })
}

fn call(svc: &Service, proc_: u32, args: &[u8]) -> Vec<u8> {
    let cred = Cred::Sys(AuthSys { stamp: 1, machine: b"fuzz".to_vec(), uid: 0, gid: 0, gids: vec![] });
    let mut rec = Vec::new();
    rpc::encode_call(&mut rec, 1, 100003, 3, proc_, &cred, args);
    let mut out = Vec::new();
    svc.handle(&Peer { addr: [127, 0, 0, 1].into(), port: 700, conn: 1 }, &rec, &mut out);
    out
}

fn lookup_handle(svc: &Service, dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut args = Vec::new();
    nfs_proto::nfs3::encode_diropargs(&mut args, dir, name);
    let out = call(svc, 3, &args);
    // record mark (4), xid, REPLY, MSG_ACCEPTED, verf (8), SUCCESS, status, then the handle
    let body = &out[4 + 4 * 3 + 8 + 4..];
    assert_eq!(&body[..4], &[0, 0, 0, 0], "LOOKUP f");
    let mut r = nfs_proto::Reader::new(&body[4..]);
    r.opaque(64, "fh").unwrap().to_vec()
}

fuzz_target!(|data: &[u8]| {
    let Some((&first, rest)) = data.split_first() else { return };
    let w = world();
    let proc_ = (first & 0x1f) as u32 % 22;
    let mut args = Vec::new();
    put_opaque(&mut args, if first & 0x80 != 0 { &w.file } else { &w.root });
    args.extend_from_slice(rest);
    let out = call(&w.svc, proc_, &args);
    let (rec, used) = nfs_proto::record::next_record(&out, 1 << 24).unwrap().expect("one whole reply record");
    assert_eq!(used, out.len());
    assert!(rec.len() >= 24, "a reply header");
});
