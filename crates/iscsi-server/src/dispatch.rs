//! Runs one command task to its end: resolves the LU, decodes the CDB, passes admission
//! once, checks unit attentions and reservations, runs the command ([`crate::exec`]) and
//! hands the connection its answer through the task's [`crate::task::Sink`].

use std::sync::Arc;

use iscsi_proto::pdu::target::Residual;
use iscsi_proto::scsi::cdb::{self, Command, Dir};
use iscsi_proto::scsi::pr::{Access, Refusal};
use iscsi_proto::scsi::sense::{self, status, Sense};
use iscsi_proto::scsi::{data, inquiry, lun as lunfmt};

use crate::admission::{self, Op, OpKind, Outcome};
use crate::exec;
use crate::lu::LogicalUnit;
use crate::reply::Reply;
use crate::task::{Aborted, Answer, End, Event, TaskCtx};

/// What a command counts for (one operation each): a READ's or a WRITE's transfer length
/// toward MB/s, every other command as "other" (WRITE SAME and VERIFY too: like NBD's
/// WRITE_ZEROES, a 1 GiB zeroing would otherwise spend a MB/s ceiling's whole minute).
pub fn op_of(cmd: &Command, lun: u16, block_size: u32) -> Op {
    let bs = block_size as u64;
    let (kind, r) = match cmd {
        Command::Read(r) => (OpKind::Read, Some(r)),
        Command::Write(r) | Command::WriteVerify(r) | Command::CompareAndWrite(r) => {
            (OpKind::Write, Some(r))
        }
        Command::PersistentReserveOut(_) => (OpKind::OtherWrite, None),
        c if matches!(c.access(), Access::Write | Access::Legacy) => (OpKind::OtherWrite, None),
        _ => (OpKind::Other, None),
    };
    Op {
        lun,
        kind,
        bytes: r.map_or(0, |r| r.blocks as u64 * bs),
        offset: r.map_or(0, |r| r.lba.saturating_mul(bs)),
    }
}

/// Runs one command to its end and tells the connection.
pub async fn run(mut t: TaskCtx) {
    let itt = t.sink.itt;
    let events = t.sink.events.clone();
    let end = match answer(&mut t).await {
        Ok(a) => End::Answer(a),
        Err(Aborted) => End::Aborted,
    };
    let _ = events.send(Event::Done { itt, end });
}

async fn answer(t: &mut TaskCtx) -> Result<Answer, Aborted> {
    let Some(lu) = t.lu.clone() else {
        return Ok(unmapped(t));
    };
    if t.ext_cdb {
        return Ok(check(t, Sense::new(sense::INVALID_OPCODE)));
    }
    let decoded = cdb::decode(&t.cdb);
    let op = match &decoded {
        Ok(c) => op_of(c, t.lun, lu.block_size),
        Err(_) => Op {
            lun: t.lun,
            kind: OpKind::Other,
            bytes: 0,
            offset: 0,
        },
    };
    let grant = tokio::select! {
        g = admission::admit(&t.admission, &op) => g,
        _ = t.abort.wait() => return Err(Aborted),
    };
    let reply = match decoded {
        Err(s) => Reply::Check(s),
        Ok(cmd) => gate_and_run(t, &lu, cmd).await?,
    };
    let ok = matches!(reply, Reply::Good(_) | Reply::Streamed);
    admission::finish(grant, Outcome { ok }).await;
    Ok(finish(t, reply))
}

/// Unit attention, reservations, then the command.
async fn gate_and_run(
    t: &mut TaskCtx,
    lu: &Arc<LogicalUnit>,
    cmd: Command,
) -> Result<Reply, Aborted> {
    let nexus = t.session.nexus.clone();
    lu.follow_size();
    let exempt = matches!(
        cmd,
        Command::Inquiry { .. } | Command::ReportLuns { .. } | Command::RequestSense { .. }
    );
    if !exempt {
        if let Some(ua) = lu.take_attention(&nexus) {
            return Ok(Reply::Check(Sense::new(ua)));
        }
    }
    if let Err(r) = lu.pr().check(&nexus, cmd.access()) {
        return Ok(match r {
            Refusal::Conflict => Reply::Status(status::RESERVATION_CONFLICT),
            Refusal::Sense(s) => Reply::Check(s),
        });
    }
    exec::execute(t, lu, cmd).await
}

/// A command to a LUN this initiator does not see (SPC-4 §4.5.2 / SAM-5 §5.10): INQUIRY
/// answers "no device here" (peripheral qualifier 3), REPORT LUNS lists the LUNs that
/// are there, everything else is LOGICAL UNIT NOT SUPPORTED.
fn unmapped(t: &mut TaskCtx) -> Answer {
    match cdb::decode(&t.cdb) {
        Ok(Command::Inquiry {
            evpd: false, alloc, ..
        }) => {
            let mut d = vec![0u8; 36];
            d[0] = 0x7f;
            d[2] = 0x06;
            d[3] = 0x12;
            d[4] = 31;
            good(t, data_truncated(d, alloc))
        }
        Ok(Command::ReportLuns { select, alloc }) => {
            let luns = t.session.lun_numbers(&*t.shared.target);
            match data::report_luns(&luns, select, alloc) {
                Ok(d) => good(t, data_truncated(d, alloc)),
                Err(s) => check(t, s),
            }
        }
        Ok(Command::RequestSense { alloc, .. }) => {
            let d = data::request_sense(Some(Sense::new(sense::LUN_NOT_SUPPORTED)));
            good(t, data_truncated(d, alloc))
        }
        _ => check(t, Sense::new(sense::LUN_NOT_SUPPORTED)),
    }
}

pub fn data_truncated(d: Vec<u8>, alloc: u32) -> Vec<u8> {
    iscsi_proto::scsi::truncate(d, alloc)
}

/// Turns a reply into the answer: small data-in with the status collapsed into its last
/// PDU, or a SCSI Response.
fn finish(t: &mut TaskCtx, reply: Reply) -> Answer {
    match reply {
        Reply::Good(d) if t.read && !d.is_empty() && t.edtl > 0 => {
            let n = (d.len() as u32).min(t.edtl);
            let residual = Residual::of(t.edtl, d.len() as u32);
            let mut bytes = Vec::with_capacity(n as usize + 64);
            let at = t
                .sink
                .encode::<std::convert::Infallible>(
                    &mut bytes,
                    n,
                    Some((status::GOOD, residual)),
                    |o, b| {
                        b.copy_from_slice(&d[o as usize..o as usize + b.len()]);
                        Ok(())
                    },
                )
                .unwrap_or(None);
            Answer {
                bytes,
                collapsed_at: at,
                status: status::GOOD,
                sense: None,
                residual,
                datasn: t.sink.datasn,
            }
        }
        Reply::Good(d) => {
            let residual = if t.read {
                Residual::of(t.edtl, d.len() as u32)
            } else {
                expected_residual(t)
            };
            response(t, status::GOOD, None, residual)
        }
        Reply::Tail {
            bytes,
            at,
            residual,
        } => Answer {
            bytes,
            collapsed_at: Some(at),
            status: status::GOOD,
            sense: None,
            residual,
            datasn: t.sink.datasn,
        },
        Reply::Streamed => {
            let r = expected_residual(t);
            response(t, status::GOOD, None, r)
        }
        Reply::Status(s) => response(t, s, None, Residual::None),
        Reply::Check(s) => {
            let r = expected_residual(t);
            response(t, status::CHECK_CONDITION, Some(s), r)
        }
    }
}

fn check(t: &mut TaskCtx, s: Sense) -> Answer {
    finish(t, Reply::Check(s))
}

fn good(t: &mut TaskCtx, d: Vec<u8>) -> Answer {
    finish(t, Reply::Good(d))
}

/// The residual by what the CDB asked to move: a data-out command's data, a read's
/// blocks; nothing for the rest.
fn expected_residual(t: &TaskCtx) -> Residual {
    let bs = t.lu.as_ref().map(|l| l.block_size).unwrap_or(512) as u64;
    let wanted = match cdb::decode(&t.cdb) {
        Ok(c) if c.dir(bs as u32) == Dir::Out => c.data_out_len(bs as u32),
        Ok(Command::Read(r)) => r.blocks as u64 * bs,
        _ => 0,
    };
    Residual::of(t.edtl, wanted.min(u32::MAX as u64) as u32)
}

fn response(t: &TaskCtx, status: u8, sense: Option<Sense>, residual: Residual) -> Answer {
    Answer {
        bytes: Vec::new(),
        collapsed_at: None,
        status,
        sense,
        residual,
        datasn: t.sink.datasn,
    }
}

/// The standard INQUIRY of a mapped LU (used by [`exec`] too).
pub fn standard_inquiry(lu: &LogicalUnit) -> Vec<u8> {
    inquiry::standard(&lu.unit())
}

/// The LUN field of a LUN number.
pub fn lun_field(lun: u16) -> u64 {
    lunfmt::encode(lun)
}
