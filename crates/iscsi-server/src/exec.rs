//! SCSI command semantics over a logical unit (SPC-4, SBC-3): every command the decoder
//! knows, checked (ranges, capabilities, parameter lists) before any I/O. The commands
//! that move data are in [`crate::rw`]'s functions (`read`, `write`, ...).

use std::sync::Arc;

use iscsi_proto::scsi::cdb::Command;
use iscsi_proto::scsi::pr::{self, Refusal};
use iscsi_proto::scsi::sense::{self, status, Sense};
use iscsi_proto::scsi::{data, inquiry, mode, truncate};

use crate::lu::LogicalUnit;
use crate::reply::{check, in_range, Reply};
use crate::rw;
use crate::task::{Aborted, TaskCtx};

/// Runs `cmd` (its unit attention and reservation checks passed).
pub async fn execute(
    t: &mut TaskCtx,
    lu: &Arc<LogicalUnit>,
    cmd: Command,
) -> Result<Reply, Aborted> {
    let r = match cmd {
        Command::Read(r) => rw::read(t, lu, r).await,
        Command::Write(r) | Command::WriteVerify(r) => rw::write(t, lu, r).await,
        Command::Verify { rw, bytchk } => rw::verify(t, lu, rw, bytchk).await,
        Command::WriteSame(ws) => rw::write_same(t, lu, ws).await,
        Command::Unmap { anchor, len } => rw::unmap(t, lu, anchor, len).await,
        Command::CompareAndWrite(r) => rw::compare_and_write(t, lu, r).await,
        Command::SynchronizeCache { lba, blocks } => rw::synchronize(lu, lba, blocks).await,
        Command::GetLbaStatus { lba, alloc } => rw::lba_status(lu, lba, alloc).await,
        Command::PersistentReserveOut(p) => pr_out(t, lu, p).await,
        other => Ok(simple(t, lu, other)),
    };
    let reply = match r {
        Ok(x) | Err(x) => x,
    };
    if t.abort.is_set() {
        Err(Aborted)
    } else {
        Ok(reply)
    }
}

/// Commands without Data-Out and without I/O.
fn simple(t: &TaskCtx, lu: &Arc<LogicalUnit>, cmd: Command) -> Reply {
    let unit = lu.unit();
    let u = &*unit;
    let res: Result<Vec<u8>, Reply> = match cmd {
        Command::TestUnitReady | Command::StartStopUnit | Command::PreventAllow { .. } => {
            Ok(Vec::new())
        }
        Command::RequestSense { desc, alloc } => {
            if desc {
                // Only fixed-format sense data is kept.
                Err(Reply::Check(Sense::cdb_field(1)))
            } else {
                let ua = lu.take_attention(&t.session.nexus).map(Sense::new);
                Ok(truncate(data::request_sense(ua), alloc))
            }
        }
        Command::Inquiry { evpd, page, alloc } => {
            let d = if evpd {
                inquiry::vpd(u, page).map_err(Reply::Check)
            } else {
                Ok(inquiry::standard(u))
            };
            d.map(|d| truncate(d, alloc))
        }
        Command::ModeSense(m) => mode::mode_sense(u, &m)
            .map(|d| truncate(d, m.alloc))
            .map_err(Reply::Check),
        // Nothing is changeable, so MODE SELECT is not implemented.
        Command::ModeSelect { .. } => check(sense::INVALID_OPCODE),
        Command::ReadCapacity10 => Ok(data::read_capacity_10(u)),
        Command::ReadCapacity16 { alloc } => Ok(truncate(data::read_capacity_16(u), alloc)),
        Command::PreFetch { lba, blocks } => in_range(lu, lba, blocks as u64).map(|_| Vec::new()),
        Command::ReportLuns { select, alloc } => {
            let luns = t.session.lun_numbers(&*t.shared.target);
            data::report_luns(&luns, select, alloc)
                .map(|d| truncate(d, alloc))
                .map_err(Reply::Check)
        }
        Command::PersistentReserveIn { action, alloc } => lu
            .pr()
            .read(action, &|n| pr::iscsi_transport_id(n))
            .map(|d| truncate(d, alloc))
            .map_err(Reply::Check),
        Command::Reserve => lu
            .pr()
            .reserve_legacy(&t.session.nexus)
            .map(|_| Vec::new())
            .map_err(refusal),
        Command::Release => lu
            .pr()
            .release_legacy(&t.session.nexus)
            .map(|_| Vec::new())
            .map_err(refusal),
        Command::ReportSupportedOpcodes(r) => data::report_supported_opcodes(&r)
            .map(|d| truncate(d, r.alloc))
            .map_err(Reply::Check),
        // The data-moving commands are dispatched before this.
        _ => check(sense::INVALID_OPCODE),
    };
    match res {
        Ok(d) => Reply::Good(d),
        Err(r) => r,
    }
}

fn refusal(r: Refusal) -> Reply {
    match r {
        Refusal::Conflict => Reply::Status(status::RESERVATION_CONFLICT),
        Refusal::Sense(s) => Reply::Check(s),
    }
}

/// PERSISTENT RESERVE OUT: the 24-byte parameter list, then the state machine; the unit
/// attentions it causes are queued for their nexuses.
async fn pr_out(
    t: &mut TaskCtx,
    lu: &Arc<LogicalUnit>,
    p: iscsi_proto::scsi::cdb::PrOut,
) -> Result<Reply, Reply> {
    if p.len != 24 {
        return check(sense::PARAMETER_LIST_LENGTH_ERROR);
    }
    let list = t
        .data
        .collect(24)
        .await
        .map_err(|_| Reply::Status(status::TASK_ABORTED))?;
    let params = pr::out_params(&list).map_err(Reply::Check)?;
    let r = lu
        .pr()
        .out(&t.session.nexus, p.action, p.scope, p.kind, &params);
    match r {
        Ok(uas) => {
            for (n, asc) in uas {
                lu.attention(&n, asc);
            }
            Ok(Reply::Good(Vec::new()))
        }
        Err(r) => Err(refusal(r)),
    }
}
