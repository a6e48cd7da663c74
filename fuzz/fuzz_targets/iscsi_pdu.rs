#![no_main]
//! Every iSCSI-side decoder on arbitrary bytes (`iscsi_proto::fuzz::decode_all`): PDU
//! framing with and without digests, request decoding (a decoded SCSI command re-encodes
//! to one that decodes equal), text keys and their negotiation, CHAP values, CDBs, and
//! the parameter lists of UNMAP and PERSISTENT RESERVE OUT. A panic or an overflow is a
//! bug. Seeds are real initiators' bytes (libiscsi's tools and fio's libiscsi engine).
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    iscsi_proto::fuzz::decode_all(data);
});
