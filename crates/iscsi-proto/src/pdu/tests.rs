use super::initiator::{self, Reply};
use super::target::{self, Residual, Seq};
use super::*;
use crate::frame::{next_pdu, Digests};

fn decode_one(buf: &[u8]) -> Request<'_> {
    let (p, used) = next_pdu(buf, Digests::default(), 1 << 20).unwrap().unwrap();
    assert_eq!(used, buf.len());
    Request::decode(&p).unwrap()
}

#[test]
fn initiator_pdus_round_trip() {
    let mut cdb = [0u8; 16];
    cdb[0] = 0x2a;
    let cmd = ScsiCommand {
        immediate: false,
        final_: true,
        read: false,
        write: true,
        attr: 1,
        lun: 0x0001_0000_0000_0000,
        itt: 9,
        edtl: 4096,
        cmdsn: 77,
        exp_statsn: 5,
        cdb,
        ext_cdb: &[],
        bidi_read_len: None,
        data: b"immediate",
    };
    let mut out = Vec::new();
    initiator::scsi_command(&mut out, Digests::default(), &cmd);
    assert_eq!(decode_one(&out), Request::ScsiCommand(cmd));

    let login = Login {
        transit: true,
        cont: false,
        csg: 1,
        nsg: 3,
        version_max: 0,
        version_min: 0,
        isid: [0x80, 1, 2, 3, 4, 5],
        tsih: 0,
        itt: 1,
        cid: 2,
        cmdsn: 3,
        exp_statsn: 0,
        data: b"InitiatorName=iqn.x\0",
    };
    out.clear();
    initiator::login(&mut out, &login);
    assert_eq!(decode_one(&out), Request::Login(login));

    let d = DataOut {
        final_: true,
        lun: 0,
        itt: 9,
        ttt: 0x55,
        exp_statsn: 6,
        datasn: 2,
        offset: 8192,
        data: &[7; 512],
    };
    out.clear();
    initiator::data_out(&mut out, Digests::default(), &d);
    assert_eq!(decode_one(&out), Request::DataOut(d));

    let t = TaskMgmt {
        immediate: true,
        function: tmf::ABORT_TASK,
        lun: 0,
        itt: 10,
        rtt: 9,
        cmdsn: 78,
        exp_statsn: 6,
        ref_cmdsn: 77,
        exp_datasn: 0,
    };
    out.clear();
    initiator::task_mgmt(&mut out, Digests::default(), &t);
    assert_eq!(decode_one(&out), Request::TaskMgmt(t));

    let l = Logout {
        immediate: true,
        reason: logout::CLOSE_SESSION,
        itt: 11,
        cid: 2,
        cmdsn: 79,
        exp_statsn: 7,
    };
    out.clear();
    initiator::logout(&mut out, Digests::default(), &l);
    assert_eq!(decode_one(&out), Request::Logout(l));
}

#[test]
fn unknown_opcodes_and_bad_ahs_are_errors() {
    let mut b = [0u8; 48];
    b[0] = 0x1c;
    let (p, _) = next_pdu(&b, Digests::default(), 0).unwrap().unwrap();
    assert_eq!(Request::decode(&p), Err(DecodeError::UnknownOpcode(0x1c)));
    // A SCSI command with a 4-byte AHS whose length says 200.
    let mut b = vec![0u8; 52];
    b[0] = op::SCSI_CMD;
    b[4] = 1;
    b[48..52].copy_from_slice(&[0, 200, 1, 0]);
    let (p, _) = next_pdu(&b, Digests::default(), 0).unwrap().unwrap();
    assert!(matches!(
        Request::decode(&p),
        Err(DecodeError::Malformed { .. })
    ));
    // An Extended CDB AHS of 16 more bytes (a 32-byte CDB) is carried through.
    let mut b = vec![0u8; 48 + 20];
    b[0] = op::SCSI_CMD;
    b[4] = 5;
    b[48..52].copy_from_slice(&[0, 17, 1, 0]);
    b[52..68].copy_from_slice(&[3; 16]);
    let (p, _) = next_pdu(&b, Digests::default(), 0).unwrap().unwrap();
    match Request::decode(&p).unwrap() {
        Request::ScsiCommand(c) => assert_eq!(c.ext_cdb, &[3; 16]),
        r => panic!("{r:?}"),
    }
}

#[test]
fn target_pdus_read_back() {
    let seq = Seq {
        statsn: 5,
        exp_cmdsn: 10,
        max_cmdsn: 73,
    };
    let d = Digests {
        header: true,
        data: true,
    };
    let mut out = Vec::new();
    target::scsi_response(
        &mut out,
        d,
        &target::ScsiResponse {
            itt: 3,
            response: target::RESPONSE_COMPLETED,
            status: 2,
            residual: Residual::Under(512),
            sense: &[0x70, 0, 5],
            exp_datasn: 0,
            seq,
        },
    );
    let (p, used) = next_pdu(&out, d, 8192).unwrap().unwrap();
    assert_eq!(used, out.len());
    let r = Reply(p);
    assert_eq!(
        (r.opcode(), r.itt(), r.status(), r.word44()),
        (op::SCSI_RSP, 3, 2, 512)
    );
    assert_eq!(r.flags(), 0x80 | 0x02);
    assert_eq!((r.statsn(), r.exp_cmdsn(), r.max_cmdsn()), (5, 10, 73));
    assert_eq!(r.sense(), &[0x70, 0, 5]);

    out.clear();
    target::data_in(
        &mut out,
        d,
        &target::DataIn {
            lun: 0,
            itt: 4,
            final_: true,
            status: Some(0),
            residual: Residual::Over(8),
            datasn: 2,
            offset: 1024,
            seq,
        },
        &[1; 100],
    );
    let r = Reply(next_pdu(&out, d, 8192).unwrap().unwrap().0);
    assert_eq!(
        (r.flags(), r.sn(), r.offset(), r.word44()),
        (0x80 | 0x01 | 0x04, 2, 1024, 8)
    );
    assert_eq!(r.data().len(), 100);
    assert_eq!(Residual::of(10, 4), Residual::Under(6));
    assert_eq!(Residual::of(4, 10), Residual::Over(6));
}
