//! The target end to end in process: a minimal initiator (tests/common) over loopback
//! TCP against `iscsi_server::Server` with file LUNs. Login and negotiation, CHAP,
//! discovery, R2T-driven writes with digests, LUN masking, the admission seam, the CmdSN
//! window, task management, reservations, and what ends a connection (protocol errors,
//! login and NOP time-outs in virtual time).

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use iscsi_proto::pdu::initiator;
use iscsi_proto::pdu::{op, tmf, DataOut, Logout, TaskMgmt, Text, RESERVED_TAG};
use iscsi_proto::{chap, text};
use iscsi_server::admission::{Admitted, Op, OpKind};
use iscsi_server::target::Mapped;
use iscsi_server::{
    Admission, Auth, ChapSecret, Config, ConnInfo, StaticLun, StaticTarget, Target,
};
use test_support::TestDir;

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[tokio::test]
async fn negotiated_bursts_digests_and_r2ts_move_data_both_ways() {
    let srv = served("iscsi-bursts", Config::default()).await;
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    let st = c
        .login(
            TARGET,
            &[
                ("HeaderDigest", "CRC32C,None"),
                ("DataDigest", "CRC32C,None"),
                ("InitialR2T", "No"),
                ("ImmediateData", "Yes"),
                ("FirstBurstLength", "4096"),
                ("MaxBurstLength", "8192"),
                ("MaxRecvDataSegmentLength", "4096"),
                ("MaxOutstandingR2T", "1"),
                ("ErrorRecoveryLevel", "2"),
                ("X-com.example.Unknown", "1"),
            ],
        )
        .await;
    assert_eq!(st, (0, 0));
    assert_ne!(c.tsih, 0);
    for (k, v) in [
        ("HeaderDigest", "CRC32C"),
        ("DataDigest", "CRC32C"),
        ("InitialR2T", "No"),
        ("FirstBurstLength", "4096"),
        ("MaxBurstLength", "8192"),
        ("ErrorRecoveryLevel", "0"),
        ("X-com.example.Unknown", "NotUnderstood"),
        ("TargetPortalGroupTag", "1"),
        ("MaxRecvDataSegmentLength", "262144"),
    ] {
        assert_eq!(
            c.keys.get(k).map(String::as_str),
            Some(v),
            "{k}: {:?}",
            c.keys
        );
    }
    let data = pattern(65536, 7);
    // The target's MRDSL governs what we send; make unsolicited PDUs small anyway.
    c.keys
        .insert("MaxRecvDataSegmentLength".into(), "4096".into());
    let w = c.command(0, &write10(100, 128, true), 65536, &data).await;
    assert_eq!((w.status, w.flags & 0x06), (0, 0), "{w:?}");
    // 4 KiB arrived unsolicited (immediate); the other 60 KiB came in 8 KiB bursts.
    assert_eq!(w.r2ts, 8);
    let r = c.command(0, &read10(100, 128), 65536, &[]).await;
    assert_eq!(r.status, 0);
    assert!(r.data == data, "read back what was written");
    // A read the initiator expects less of: the first bytes, and an overflow residual.
    let r = c.command(0, &read10(100, 2), 512, &[]).await;
    assert_eq!((r.data.len(), r.flags & 0x06, r.residual), (512, 0x04, 512));
    srv.stop().await;
}

#[tokio::test]
async fn login_refusals_name_the_problem() {
    let srv = served("iscsi-refusals", Config::default()).await;
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    let r = login_straight(
        &mut c,
        &[
            ("InitiatorName", INITIATOR),
            ("TargetName", "iqn.2026-01.lab.qoslab:other"),
        ],
    )
    .await;
    assert_eq!(r.reply().login_status(), (2, 3), "target not found");
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    let r = login_straight(&mut c, &[("TargetName", TARGET)]).await;
    assert_eq!(r.reply().login_status(), (2, 7), "missing InitiatorName");
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    let r = login_straight(
        &mut c,
        &[
            ("InitiatorName", INITIATOR),
            ("TargetName", TARGET),
            ("MaxBurstLength", "512"),
            ("MaxBurstLength", "1024"),
        ],
    )
    .await;
    assert_eq!(r.reply().login_status(), (2, 0), "a key offered twice");
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    c.tsih = 999;
    let r = login_straight(
        &mut c,
        &[("InitiatorName", INITIATOR), ("TargetName", TARGET)],
    )
    .await;
    assert_eq!(
        r.reply().login_status(),
        (2, 0x0a),
        "no session with that TSIH"
    );
    assert_eq!(srv.shared.stats.login_failures.load(Ordering::Relaxed), 4);
    srv.stop().await;
}

#[tokio::test]
async fn discovery_lists_the_target_and_its_portal() {
    let srv = served("iscsi-discovery", Config::default()).await;
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    let r = login_straight(
        &mut c,
        &[
            ("InitiatorName", INITIATOR),
            ("SessionType", "Discovery"),
            ("MaxBurstLength", "1024"),
        ],
    )
    .await;
    assert_eq!(c.finish_login(&r), (0, 0));
    assert_eq!(
        c.keys.get("MaxBurstLength").map(String::as_str),
        Some("Irrelevant")
    );
    assert!(!c.keys.contains_key("TargetPortalGroupTag"));
    let mut data = Vec::new();
    text::push(&mut data, "SendTargets", "All");
    let mut out = Vec::new();
    initiator::text(
        &mut out,
        c.digests,
        &Text {
            immediate: true,
            final_: true,
            cont: false,
            lun: 0,
            itt: 9,
            ttt: RESERVED_TAG,
            cmdsn: c.cmdsn,
            exp_statsn: c.exp_statsn,
            data: &data,
        },
    );
    c.send(&out).await.unwrap();
    let p = c.recv().await.unwrap();
    assert_eq!(p.opcode(), op::TEXT_RSP);
    let got = String::from_utf8(p.data.clone()).unwrap();
    assert_eq!(
        got,
        format!("TargetName={TARGET}\0TargetAddress={},1\0", srv.addr)
    );
    // A SCSI command in a discovery session ends the connection.
    let itt = c.send_command(0, &[0; 6], 0, &[], false).await.unwrap();
    let p = c.recv().await.expect("a Reject");
    assert_eq!(
        (p.opcode(), p.reply().response()),
        (op::REJECT, 0x04),
        "{itt}"
    );
    assert!(c.recv().await.is_none());
    srv.stop().await;
}

fn chap_target(dir: &TestDir, mutual: bool) -> StaticTarget {
    let mut t = one_lun(dir);
    t.auth = Some(Auth {
        initiator: ChapSecret {
            user: "alice".into(),
            secret: b"initiator-secret-1".to_vec(),
        },
        target: mutual.then(|| ChapSecret {
            user: "target".into(),
            secret: b"target-secret-22".to_vec(),
        }),
    });
    t
}

/// CHAP through the security stage; returns the final status and the target's keys.
async fn chap_login(c: &mut Client, secret: &[u8], mutual: Option<(u8, &[u8])>) -> (u8, u8) {
    let initiator = c.initiator.clone();
    let r = c
        .login_pdu(
            0,
            1,
            false,
            &[
                ("InitiatorName", &initiator),
                ("TargetName", TARGET),
                ("AuthMethod", "CHAP,None"),
            ],
        )
        .await
        .unwrap();
    // The first response also carries the portal group tag (RFC 7143 §13.9).
    assert_eq!(
        text::parse(&r.data).unwrap(),
        [("AuthMethod", "CHAP"), ("TargetPortalGroupTag", "1")]
    );
    let r = c.login_pdu(0, 1, false, &[("CHAP_A", "5")]).await.unwrap();
    let keys: std::collections::HashMap<&str, &str> =
        text::parse(&r.data).unwrap().into_iter().collect();
    let id: u8 = keys["CHAP_I"].parse().unwrap();
    let challenge = chap::decode_binary(keys["CHAP_C"]).unwrap();
    assert_eq!(challenge.len(), 16);
    let resp = chap::encode_hex(&chap::response(id, secret, &challenge));
    let mut answer = vec![("CHAP_N", "alice".to_string()), ("CHAP_R", resp)];
    if let Some((i, c2)) = mutual {
        answer.push(("CHAP_I", i.to_string()));
        answer.push(("CHAP_C", chap::encode_hex(c2)));
    }
    let kv: Vec<(&str, &str)> = answer.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = c.login_pdu(0, 3, true, &kv).await.unwrap();
    c.finish_login(&r)
}

#[tokio::test]
async fn chap_admits_the_secret_refuses_others_and_proves_the_target() {
    let dir = TestDir::new("iscsi-chap");
    let t = chap_target(&dir, true);
    let srv = start(dir, t, Config::default()).await;
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    assert_eq!(chap_login(&mut c, b"wrong-secret-000", None).await, (2, 1));
    assert!(c.recv().await.is_none(), "closed after a failed login");
    // Without authentication at all: refused.
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    assert_eq!(c.login(TARGET, &[]).await, (2, 1));
    // The right secret, and a mutual challenge the target answers with its own.
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    let mine = [9u8; 16];
    assert_eq!(
        chap_login(&mut c, b"initiator-secret-1", Some((7, &mine))).await,
        (0, 0)
    );
    assert_eq!(c.keys["CHAP_N"], "target");
    let expect = chap::encode_hex(&chap::response(7, b"target-secret-22", &mine));
    assert_eq!(c.keys["CHAP_R"], expect);
    let r = c.command(0, &[0; 6], 0, &[]).await;
    assert_eq!(r.status, 0, "TEST UNIT READY after CHAP");
    srv.stop().await;
}

fn report_luns(alloc: u32) -> Vec<u8> {
    let mut c = vec![0xa0, 0, 0, 0, 0, 0];
    c.extend_from_slice(&alloc.to_be_bytes());
    c.extend_from_slice(&[0, 0]);
    c
}

#[tokio::test]
async fn an_initiator_sees_only_the_luns_mapped_to_it() {
    let dir = TestDir::new("iscsi-masking");
    let t = StaticTarget {
        name: TARGET.into(),
        alias: Some("lab".into()),
        luns: vec![
            StaticLun {
                number: 0,
                lu: file_lu(&dir, "a.img", 1 << 20),
                initiators: Some(vec![INITIATOR.into()]),
            },
            StaticLun {
                number: 5,
                lu: file_lu(&dir, "b.img", 1 << 20),
                initiators: None,
            },
        ],
        auth: None,
    };
    let srv = start(dir, t, Config::default()).await;
    let mut a = logged_in(&srv, INITIATOR).await;
    assert_eq!(a.keys.get("TargetAlias").map(String::as_str), Some("lab"));
    let r = a.command(0, &report_luns(64), 64, &[]).await;
    assert_eq!(&r.data[..4], &[0, 0, 0, 16]);
    assert_eq!(
        (&r.data[8..10], &r.data[16..18]),
        (&[0u8, 0][..], &[0u8, 5][..])
    );
    let mut b = logged_in(&srv, "iqn.2026-01.lab.qoslab:initiator-b").await;
    let r = b.command(0, &report_luns(64), 64, &[]).await;
    assert_eq!(
        (&r.data[..4], &r.data[8..10]),
        (&[0u8, 0, 0, 8][..], &[0u8, 5][..])
    );
    // LUN 0 is not there for b: INQUIRY says so, anything else is refused.
    let r = b.command(0, &[0x12, 0, 0, 0, 36, 0], 36, &[]).await;
    assert_eq!(r.data[0], 0x7f, "peripheral qualifier 3: no LU");
    let r = b.command(0, &[0; 6], 0, &[]).await;
    assert_eq!(
        (r.status, r.asc()),
        (2, (5, 0x25, 0)),
        "LOGICAL UNIT NOT SUPPORTED"
    );
    let r = b.command(0, &read10(0, 1), 512, &[]).await;
    assert_eq!(r.asc(), (5, 0x25, 0));
    srv.stop().await;
}

/// A target whose admission records each op and holds the commands `hold` says until
/// released.
struct Gated {
    inner: StaticTarget,
    ops: Arc<Mutex<Vec<Op>>>,
    gate: Arc<tokio::sync::Semaphore>,
    hold: fn(&Op) -> bool,
}

struct GatedAdmission {
    ops: Arc<Mutex<Vec<Op>>>,
    gate: Arc<tokio::sync::Semaphore>,
    hold: fn(&Op) -> bool,
}

impl Admission for GatedAdmission {
    fn admit(&self, op: &Op) -> Admitted {
        self.ops.lock().unwrap().push(*op);
        if !(self.hold)(op) {
            return Admitted::Now(None);
        }
        let gate = self.gate.clone();
        Admitted::Later(Box::pin(async move {
            let _ = gate.acquire().await.map(|p| p.forget());
            None
        }))
    }
}

impl Target for Gated {
    fn name(&self) -> String {
        self.inner.name()
    }
    fn luns(&self, initiator: &str) -> Vec<Mapped> {
        self.inner.luns(initiator)
    }
    fn admission(&self, _conn: &ConnInfo) -> Arc<dyn Admission> {
        Arc::new(GatedAdmission {
            ops: self.ops.clone(),
            gate: self.gate.clone(),
            hold: self.hold,
        })
    }
}

#[tokio::test]
async fn admission_sees_each_command_once_and_may_hold_it_until_an_abort() {
    let dir = TestDir::new("iscsi-admission");
    let ops = Arc::new(Mutex::new(Vec::new()));
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let t = Gated {
        inner: one_lun(&dir),
        ops: ops.clone(),
        gate: gate.clone(),
        hold: |op| op.kind == OpKind::Write,
    };
    let srv = start(dir, t, Config::default()).await;
    let mut c = Client::connect(srv.addr, INITIATOR).await.unwrap();
    assert_eq!(
        c.login(TARGET, &[("InitialR2T", "Yes"), ("ImmediateData", "No")])
            .await,
        (0, 0)
    );
    assert_eq!(c.command(0, &read10(0, 8), 4096, &[]).await.status, 0);
    // A write is held by admission: no R2T (its data is not asked for) until released.
    let data = pattern(4096, 1);
    let held = c
        .send_command(0, &write10(8, 8, false), 4096, &data, false)
        .await
        .unwrap();
    let p = c.nop().await.expect("the NOP answer comes first");
    assert_eq!(p.opcode(), op::NOP_IN);
    gate.add_permits(1);
    let w = c.complete(held, 0, &data).await.unwrap();
    assert_eq!((w.status, w.r2ts), (0, 1));
    {
        let ops = ops.lock().unwrap();
        assert_eq!(
            *ops,
            [
                Op {
                    lun: 0,
                    kind: OpKind::Read,
                    bytes: 4096,
                    offset: 0,
                },
                Op {
                    lun: 0,
                    kind: OpKind::Write,
                    bytes: 4096,
                    offset: 4096,
                }
            ]
        );
    }
    // Held again, then aborted: the TMF answers, the command never does.
    let held = c
        .send_command(0, &write10(8, 8, false), 4096, &data, false)
        .await
        .unwrap();
    let mut out = Vec::new();
    initiator::task_mgmt(
        &mut out,
        c.digests,
        &TaskMgmt {
            immediate: true,
            function: tmf::ABORT_TASK,
            lun: 0,
            itt: 500,
            rtt: held,
            cmdsn: c.cmdsn,
            exp_statsn: c.exp_statsn,
            ref_cmdsn: c.cmdsn.wrapping_sub(1),
            exp_datasn: 0,
        },
    );
    c.send(&out).await.unwrap();
    let p = c.recv().await.unwrap();
    assert_eq!(
        (p.opcode(), p.reply().itt(), p.reply().response()),
        (op::TMF_RSP, 500, 0)
    );
    let p = c.nop().await.unwrap();
    assert_eq!(p.opcode(), op::NOP_IN, "no answer for the aborted write");
    // ABORT TASK of a tag that is not running.
    let mut out = Vec::new();
    initiator::task_mgmt(
        &mut out,
        c.digests,
        &TaskMgmt {
            immediate: true,
            function: tmf::ABORT_TASK,
            lun: 0,
            itt: 501,
            rtt: 4242,
            cmdsn: c.cmdsn,
            exp_statsn: c.exp_statsn,
            ref_cmdsn: 0,
            exp_datasn: 0,
        },
    );
    c.send(&out).await.unwrap();
    assert_eq!(
        c.recv().await.unwrap().reply().response(),
        1,
        "task does not exist"
    );
    srv.stop().await;
}

#[tokio::test]
async fn commands_outside_the_window_are_ignored() {
    let srv = served(
        "iscsi-window",
        Config {
            cmd_window: 4,
            ..Config::default()
        },
    )
    .await;
    let mut c = logged_in(&srv, INITIATOR).await;
    assert_eq!(c.max_cmdsn, c.cmdsn + 3, "a window of 4");
    let good = c.cmdsn;
    c.cmdsn = c.max_cmdsn + 1;
    c.send_command(0, &[0; 6], 0, &[], false).await.unwrap(); // too high
    c.cmdsn = good.wrapping_sub(1);
    c.send_command(0, &[0; 6], 0, &[], false).await.unwrap(); // too low
    c.cmdsn = good;
    let p = c.nop().await.unwrap();
    assert_eq!(p.opcode(), op::NOP_IN, "neither command was answered");
    assert_eq!(p.reply().exp_cmdsn(), good + 1);
    srv.stop().await;
}

#[tokio::test]
async fn a_protocol_error_ends_only_its_own_connection() {
    let srv = served("iscsi-errors", Config::default()).await;
    let mut healthy = logged_in(&srv, INITIATOR).await;
    // A Data-Out out of sequence (DataSN 3 first).
    let mut c = Client::connect(srv.addr, "iqn.2026-01.lab.qoslab:bad")
        .await
        .unwrap();
    assert_eq!(
        c.login(TARGET, &[("InitialR2T", "No"), ("ImmediateData", "No")])
            .await,
        (0, 0)
    );
    c.keys.insert("FirstBurstLength".into(), "0".into());
    let itt = c
        .send_command(0, &write10(0, 1, false), 512, &[], false)
        .await
        .unwrap();
    let r2t = c.recv().await.unwrap();
    assert_eq!(r2t.opcode(), op::R2T);
    let ttt = r2t.reply().ttt();
    let mut out = Vec::new();
    initiator::data_out(
        &mut out,
        c.digests,
        &DataOut {
            final_: true,
            lun: 0,
            itt,
            ttt,
            exp_statsn: 0,
            datasn: 3,
            offset: 0,
            data: &[0; 512],
        },
    );
    // More follows that the target never parses (as an initiator's pipelined PDUs do),
    // more than the target reads in one go: its end must still be an orderly one (FIN),
    // not a reset that makes the initiator's next write fail with EPIPE.
    out.extend(std::iter::repeat_n(0u8, 1 << 20));
    c.send(&out).await.unwrap();
    let p = c.recv().await.expect("a Reject");
    assert_eq!((p.opcode(), p.reply().response()), (op::REJECT, 0x04));
    let mut rest = [0u8; 64];
    match tokio::io::AsyncReadExt::read(&mut c.stream, &mut rest).await {
        Ok(0) => {}
        other => panic!("the connection should end with FIN, got {other:?}"),
    }
    c.send(&[0u8; 48])
        .await
        .expect("a write after the target's FIN is not refused with a reset");
    // Garbage: a header whose data segment is over every limit.
    let mut g = Client::connect(srv.addr, INITIATOR).await.unwrap();
    let mut junk = vec![0x43u8; 48];
    junk[5..8].copy_from_slice(&[0xff, 0xff, 0xff]);
    g.send(&junk).await.unwrap();
    assert!(g.recv().await.is_none());
    // The first client is served throughout.
    assert_eq!(healthy.command(0, &[0; 6], 0, &[]).await.status, 0);
    assert!(srv.shared.stats.protocol_errors.load(Ordering::Relaxed) >= 1);
    srv.stop().await;
}

#[tokio::test(start_paused = true)]
async fn silent_connections_time_out_in_login_and_after_a_ping() {
    let cfg = Config {
        login_timeout: Duration::from_secs(15),
        nop_interval: Duration::from_secs(30),
        nop_timeout: Duration::from_secs(30),
        ..Config::default()
    };
    let srv = served("iscsi-timeouts", cfg).await;
    let mut idle = Client::connect(srv.addr, INITIATOR).await.unwrap();
    let t0 = tokio::time::Instant::now();
    assert!(idle.recv().await.is_none(), "closed without a login");
    assert!(t0.elapsed() >= Duration::from_secs(15));
    let mut c = logged_in(&srv, INITIATOR).await;
    let t0 = tokio::time::Instant::now();
    let p = c.recv().await.expect("a ping");
    assert_eq!((p.opcode(), p.reply().itt()), (op::NOP_IN, RESERVED_TAG));
    assert!(t0.elapsed() >= Duration::from_secs(30));
    assert!(c.recv().await.is_none(), "unanswered, the connection ends");
    assert!(t0.elapsed() >= Duration::from_secs(60));
    srv.stop().await;
}

#[tokio::test]
async fn lun_reset_releases_reserve6_and_tells_the_other_nexus() {
    let srv = served("iscsi-reset", Config::default()).await;
    let mut a = logged_in(&srv, INITIATOR).await;
    let mut b = logged_in(&srv, "iqn.2026-01.lab.qoslab:initiator-b").await;
    assert_eq!(b.command(0, &[0; 6], 0, &[]).await.status, 0);
    assert_eq!(
        a.command(0, &[0x16, 0, 0, 0, 0, 0], 0, &[]).await.status,
        0,
        "RESERVE(6)"
    );
    assert_eq!(
        b.command(0, &read10(0, 1), 512, &[]).await.status,
        0x18,
        "conflict"
    );
    let mut out = Vec::new();
    initiator::task_mgmt(
        &mut out,
        a.digests,
        &TaskMgmt {
            immediate: true,
            function: tmf::LOGICAL_UNIT_RESET,
            lun: 0,
            itt: 77,
            rtt: RESERVED_TAG,
            cmdsn: a.cmdsn,
            exp_statsn: a.exp_statsn,
            ref_cmdsn: 0,
            exp_datasn: 0,
        },
    );
    a.send(&out).await.unwrap();
    assert_eq!(a.recv().await.unwrap().reply().response(), 0);
    let r = b.command(0, &read10(0, 1), 512, &[]).await;
    assert_eq!(r.asc(), (6, 0x29, 0x03), "UNIT ATTENTION: LUN reset");
    assert_eq!(
        b.command(0, &read10(0, 1), 512, &[]).await.status,
        0,
        "reservation gone"
    );
    srv.stop().await;
}

#[tokio::test]
async fn sessions_take_several_connections_and_a_new_login_reinstates() {
    let srv = served("iscsi-sessions", Config::default()).await;
    let mut c1 = Client::connect(srv.addr, INITIATOR).await.unwrap();
    assert_eq!(c1.login(TARGET, &[("MaxConnections", "2")]).await, (0, 0));
    let mut c2 = Client::connect(srv.addr, INITIATOR).await.unwrap();
    c2.tsih = c1.tsih;
    c2.cid = 2;
    c2.cmdsn = c1.cmdsn;
    assert_eq!(c2.login(TARGET, &[]).await, (0, 0));
    assert_eq!(c2.tsih, c1.tsih);
    // One window for both: c2's command takes the next CmdSN, then c1's the one after.
    assert_eq!(c2.command(0, &[0; 6], 0, &[]).await.status, 0);
    c1.cmdsn = c2.cmdsn;
    assert_eq!(c1.command(0, &[0; 6], 0, &[]).await.status, 0);
    // A third connection is over MaxConnections=2.
    let mut c3 = Client::connect(srv.addr, INITIATOR).await.unwrap();
    c3.tsih = c1.tsih;
    c3.cid = 3;
    assert_eq!(c3.login(TARGET, &[]).await, (2, 6));
    // Logging out c2 alone leaves c1 working.
    c2.cmdsn = c1.cmdsn;
    let mut out = Vec::new();
    initiator::logout(
        &mut out,
        c2.digests,
        &Logout {
            immediate: true,
            reason: 1,
            itt: 90,
            cid: 2,
            cmdsn: c2.cmdsn,
            exp_statsn: c2.exp_statsn,
        },
    );
    c2.send(&out).await.unwrap();
    assert_eq!(c2.recv().await.unwrap().opcode(), op::LOGOUT_RSP);
    assert!(c2.recv().await.is_none());
    assert_eq!(c1.command(0, &[0; 6], 0, &[]).await.status, 0);
    // The same initiator and ISID logging in anew ends the old session.
    let mut again = logged_in(&srv, INITIATOR).await;
    assert_ne!(again.tsih, c1.tsih);
    assert!(
        c1.recv().await.is_none(),
        "the old session's connection closed"
    );
    assert_eq!(again.command(0, &[0; 6], 0, &[]).await.status, 0);
    srv.stop().await;
}

#[tokio::test]
async fn connections_past_the_limit_are_closed_on_accept() {
    let srv = served(
        "iscsi-limit",
        Config {
            max_connections: 2,
            ..Config::default()
        },
    )
    .await;
    let _a = logged_in(&srv, INITIATOR).await;
    let _b = logged_in(&srv, "iqn.2026-01.lab.qoslab:initiator-b").await;
    let mut c = Client::connect(srv.addr, "iqn.2026-01.lab.qoslab:initiator-c")
        .await
        .unwrap();
    c.send(&[0u8; 48]).await.unwrap();
    assert!(c.recv().await.is_none());
    let seen = AtomicUsize::new(srv.shared.stats.connections.load(Ordering::Relaxed));
    assert_eq!(seen.load(Ordering::Relaxed), 2);
    srv.stop().await;
}
