//! Collecting one write command's Data-Out (RFC 7143 §4.2.5): immediate data, then an
//! unsolicited sequence (InitialR2T=No, up to FirstBurstLength), then bursts of at most
//! MaxBurstLength the target asks for with R2Ts, at most MaxOutstandingR2T at once.
//! In-order data only (DataPDUInOrder=Yes, DataSequenceInOrder=Yes): each PDU's DataSN
//! and buffer offset must be the next of its sequence, or the connection ends (error
//! recovery level 0). Complete bursts go to the command's task, which takes them one at
//! a time: at most two bursts wait for it, so a write's memory stays bounded.

use iscsi_proto::pdu::{DataOut, ScsiCommand, RESERVED_TAG};
use tokio::sync::mpsc::UnboundedSender;

use crate::task::Chunk;

/// An R2T to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct R2tReq {
    pub ttt: u32,
    pub r2tsn: u32,
    pub offset: u32,
    pub len: u32,
}

/// The session's data-transfer parameters.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    pub initial_r2t: bool,
    pub immediate_data: bool,
    pub first_burst: u32,
    pub max_burst: u32,
    pub max_outstanding_r2t: u16,
}

struct Burst {
    ttt: u32,
    offset: u32,
    len: u32,
    got: Vec<u8>,
    datasn: u32,
}

/// Bursts handed to the task and not yet consumed, beyond which no R2T goes out.
const UNCONSUMED: u32 = 2;

/// One write command's Data-Out state.
pub struct WriteState {
    p: Transfer,
    unsol: Vec<u8>,
    unsol_open: bool,
    unsol_limit: u32,
    unsol_datasn: u32,
    unsol_total: u32,
    want: Option<u32>,
    next: u32,
    r2tsn: u32,
    outstanding: Vec<Burst>,
    unconsumed: u32,
    tx: UnboundedSender<Chunk>,
}

impl WriteState {
    /// The state of a command with the W bit; its immediate data is the first bytes.
    pub fn new(
        cmd: &ScsiCommand<'_>,
        p: Transfer,
        tx: UnboundedSender<Chunk>,
    ) -> Result<WriteState, String> {
        let imm = cmd.data.len() as u32;
        if imm > 0 && !p.immediate_data {
            return Err("immediate data with ImmediateData=No".into());
        }
        if imm > cmd.edtl || imm > p.first_burst {
            return Err(format!(
                "{imm} bytes of immediate data (expected length {}, FirstBurstLength {})",
                cmd.edtl, p.first_burst
            ));
        }
        let unsol_open = !cmd.final_;
        if unsol_open && p.initial_r2t {
            return Err("F=0 on a command with InitialR2T=Yes".into());
        }
        let unsol_limit = if p.initial_r2t {
            imm
        } else {
            p.first_burst.min(cmd.edtl)
        };
        let mut w = WriteState {
            p,
            unsol: cmd.data.to_vec(),
            unsol_open,
            unsol_limit,
            unsol_datasn: 0,
            unsol_total: imm,
            want: None,
            next: 0,
            r2tsn: 0,
            outstanding: Vec::new(),
            unconsumed: 0,
            tx,
        };
        if !unsol_open {
            w.close_unsolicited();
        }
        Ok(w)
    }

    fn close_unsolicited(&mut self) {
        self.unsol_open = false;
        self.next = self.unsol_total;
        if !self.unsol.is_empty() {
            let data = std::mem::take(&mut self.unsol);
            let _ = self.tx.send(Chunk {
                offset: 0,
                data,
                solicited: false,
            });
        }
    }

    /// One Data-Out PDU; an error is a protocol error (the connection ends).
    pub fn data_out(&mut self, d: &DataOut<'_>) -> Result<(), String> {
        let len = d.data.len() as u32;
        if d.ttt == RESERVED_TAG {
            if !self.unsol_open {
                return Err("unsolicited Data-Out after the unsolicited data ended".into());
            }
            if d.datasn != self.unsol_datasn {
                return Err(format!(
                    "DataSN {} where {} was due",
                    d.datasn, self.unsol_datasn
                ));
            }
            if d.offset != self.unsol_total {
                return Err(format!(
                    "buffer offset {} where {} was due",
                    d.offset, self.unsol_total
                ));
            }
            if self.unsol_total + len > self.unsol_limit {
                return Err(format!(
                    "unsolicited data past {} bytes (FirstBurstLength or the expected length)",
                    self.unsol_limit
                ));
            }
            self.unsol.extend_from_slice(d.data);
            self.unsol_total += len;
            self.unsol_datasn += 1;
            if d.final_ {
                self.close_unsolicited();
            }
            return Ok(());
        }
        let Some(i) = self.outstanding.iter().position(|b| b.ttt == d.ttt) else {
            return Err(format!(
                "Data-Out with target transfer tag 0x{:x} of no R2T",
                d.ttt
            ));
        };
        let b = &mut self.outstanding[i];
        if d.datasn != b.datasn {
            return Err(format!("DataSN {} where {} was due", d.datasn, b.datasn));
        }
        let at = b.offset + b.got.len() as u32;
        if d.offset != at {
            return Err(format!("buffer offset {} where {at} was due", d.offset));
        }
        if b.got.len() as u32 + len > b.len {
            return Err(format!(
                "{} bytes past the R2T's {}",
                b.got.len() as u32 + len - b.len,
                b.len
            ));
        }
        b.got.extend_from_slice(d.data);
        b.datasn += 1;
        if b.got.len() as u32 == b.len {
            let b = self.outstanding.remove(i);
            let _ = self.tx.send(Chunk {
                offset: b.offset,
                data: b.got,
                solicited: true,
            });
        } else if d.final_ {
            return Err("F set before the end of the R2T's burst".into());
        }
        Ok(())
    }

    /// The task is admitted and takes `want` bytes: R2Ts for what is missing.
    pub fn ready(&mut self, want: u32, ttt: &mut dyn FnMut() -> u32) -> Vec<R2tReq> {
        self.want = Some(want);
        self.issue(ttt)
    }

    /// The task consumed a solicited burst.
    pub fn more(&mut self, ttt: &mut dyn FnMut() -> u32) -> Vec<R2tReq> {
        self.unconsumed = self.unconsumed.saturating_sub(1);
        self.issue(ttt)
    }

    /// R2Ts that may go out now (also after the unsolicited data ends).
    pub fn issue(&mut self, ttt: &mut dyn FnMut() -> u32) -> Vec<R2tReq> {
        let mut v = Vec::new();
        let Some(want) = self.want else { return v };
        if self.unsol_open {
            return v;
        }
        while self.next < want
            && self.outstanding.len() < self.p.max_outstanding_r2t.max(1) as usize
            && self.unconsumed < UNCONSUMED
        {
            let len = (want - self.next).min(self.p.max_burst);
            let r = R2tReq {
                ttt: ttt(),
                r2tsn: self.r2tsn,
                offset: self.next,
                len,
            };
            self.outstanding.push(Burst {
                ttt: r.ttt,
                offset: r.offset,
                len,
                got: Vec::with_capacity(len as usize),
                datasn: 0,
            });
            self.r2tsn += 1;
            self.next += len;
            self.unconsumed += 1;
            v.push(r);
        }
        v
    }

    /// No Data-Out is still due: the answer may go out.
    pub fn quiescent(&self) -> bool {
        !self.unsol_open && self.outstanding.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    fn cmd(edtl: u32, final_: bool, data: &[u8]) -> ScsiCommand<'_> {
        ScsiCommand {
            immediate: false,
            final_,
            read: false,
            write: true,
            attr: 1,
            lun: 0,
            itt: 1,
            edtl,
            cmdsn: 0,
            exp_statsn: 0,
            cdb: [0; 16],
            ext_cdb: &[],
            bidi_read_len: None,
            data,
        }
    }

    fn out(ttt: u32, datasn: u32, offset: u32, final_: bool, data: &[u8]) -> DataOut<'_> {
        DataOut {
            final_,
            lun: 0,
            itt: 1,
            ttt,
            exp_statsn: 0,
            datasn,
            offset,
            data,
        }
    }

    const P: Transfer = Transfer {
        initial_r2t: false,
        immediate_data: true,
        first_burst: 1024,
        max_burst: 2048,
        max_outstanding_r2t: 1,
    };

    #[test]
    fn immediate_unsolicited_then_r2t_bursts() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut w = WriteState::new(&cmd(5120, false, &[1; 512]), P, tx).unwrap();
        let mut next_ttt = 100;
        let mut ttt = || {
            next_ttt += 1;
            next_ttt
        };
        assert!(
            w.ready(5120, &mut ttt).is_empty(),
            "unsolicited data still open"
        );
        w.data_out(&out(RESERVED_TAG, 0, 512, true, &[2; 512]))
            .unwrap();
        let c = rx.try_recv().unwrap();
        assert_eq!((c.offset, c.data.len(), c.solicited), (0, 1024, false));
        let r = w.issue(&mut ttt);
        assert_eq!(
            r,
            [R2tReq {
                ttt: 101,
                r2tsn: 0,
                offset: 1024,
                len: 2048
            }]
        );
        w.data_out(&out(101, 0, 1024, false, &[3; 1024])).unwrap();
        w.data_out(&out(101, 1, 2048, true, &[3; 1024])).unwrap();
        assert_eq!(rx.try_recv().unwrap().offset, 1024);
        assert!(w.issue(&mut ttt).len() == 1, "one consumed slot left");
        assert!(!w.quiescent());
        w.data_out(&out(102, 0, 3072, true, &[4; 2048])).unwrap();
        assert!(w.quiescent());
        assert!(w.more(&mut ttt).is_empty(), "all asked for");
    }

    #[test]
    fn sequence_errors_end_the_connection() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let fresh = |final_| WriteState::new(&cmd(2048, final_, &[]), P, tx.clone()).unwrap();
        let mut w = fresh(false);
        assert!(
            w.data_out(&out(RESERVED_TAG, 1, 0, false, &[0; 512]))
                .is_err(),
            "DataSN 1 first"
        );
        let mut w = fresh(false);
        w.data_out(&out(RESERVED_TAG, 0, 0, false, &[0; 512]))
            .unwrap();
        assert!(
            w.data_out(&out(RESERVED_TAG, 0, 512, false, &[0; 512]))
                .is_err(),
            "DataSN repeated"
        );
        let mut w = fresh(false);
        assert!(
            w.data_out(&out(RESERVED_TAG, 0, 0, false, &[0; 1536]))
                .is_err(),
            "past FirstBurstLength"
        );
        let mut w = fresh(true);
        assert!(
            w.data_out(&out(RESERVED_TAG, 0, 0, true, &[0; 512]))
                .is_err(),
            "F=1 on the command"
        );
        assert!(
            w.data_out(&out(7, 0, 0, true, &[0; 512])).is_err(),
            "no such R2T"
        );
        let strict = Transfer {
            initial_r2t: true,
            immediate_data: false,
            ..P
        };
        assert!(WriteState::new(&cmd(512, true, &[0; 512]), strict, tx.clone()).is_err());
        assert!(WriteState::new(&cmd(512, false, &[]), strict, tx).is_err());
    }
}
