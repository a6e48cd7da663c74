#![no_main]
//! Every NFS-side decoder on arbitrary bytes: record marking, the ONC RPC header and
//! AUTH_SYS credential, and the arguments of every NFSv3, MOUNT v3 and portmapper
//! procedure (`nfs_proto::fuzz::decode_all`). A panic or an overflow is a bug.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    nfs_proto::fuzz::decode_all(data);
});
