//! The requests a connection answers itself: NOP-Out, task management, text
//! (SendTargets) and logout.

use std::net::SocketAddr;

use iscsi_proto::frame::BHS_LEN;
use iscsi_proto::pdu::target::{self as tpdu, logout_response, reject, tmf_response};
use iscsi_proto::pdu::{logout, tmf, Logout, NopOut, TaskMgmt, Text, RESERVED_TAG};
use iscsi_proto::scsi::lun;
use iscsi_proto::scsi::sense::LUN_RESET_OCCURRED;
use iscsi_proto::text::{self, MAX_TEXT, NOT_UNDERSTOOD};

use super::{protocol, Conn, PendingLogout, PendingTmf};

/// `IP:PORT` as TargetAddress writes it (IPv6 in brackets).
pub fn portal(addr: SocketAddr) -> String {
    match addr {
        SocketAddr::V4(a) => a.to_string(),
        SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    }
}

impl Conn {
    pub(super) fn nop(&mut self, n: NopOut<'_>) {
        if n.itt == RESERVED_TAG {
            // The answer to our ping (or a NOP-Out asking for nothing).
            return;
        }
        let Some(counted) = self.arrive(n.immediate, n.cmdsn) else {
            return;
        };
        if counted {
            self.session.done();
        }
        let echo = &n.data[..n.data.len().min(self.wire.mrdsl as usize)];
        let seq = self.seq();
        tpdu::nop_in(
            &mut self.out,
            self.digests,
            n.lun,
            n.itt,
            RESERVED_TAG,
            seq,
            echo,
        );
        self.statsn = self.statsn.wrapping_add(1);
    }

    pub(super) fn tmf_response(&mut self, itt: u32, response: u8, counted: bool) {
        if counted {
            self.session.done();
        }
        let seq = self.seq();
        tpdu::tmf_response(&mut self.out, self.digests, itt, response, seq);
        self.statsn = self.statsn.wrapping_add(1);
    }

    /// Aborts this connection's tasks that `pick` selects; returns their tags.
    fn abort_tasks(&mut self, pick: impl Fn(u32, u64) -> bool) -> Vec<u32> {
        let mut v = Vec::new();
        for (itt, e) in self.tasks.iter_mut() {
            if !e.aborted && pick(*itt, e.lun) {
                e.aborted = true;
                e.abort.abort();
                v.push(*itt);
            }
        }
        v
    }

    pub(super) fn tmf(&mut self, t: TaskMgmt) {
        let Some(counted) = self.arrive(t.immediate, t.cmdsn) else {
            return;
        };
        let mapped = lun::decode(t.lun).and_then(|n| self.session.lu(&*self.shared.target, n));
        let waiting = match t.function {
            tmf::ABORT_TASK => {
                if self.tasks.get(&t.rtt).is_none_or(|e| e.aborted) {
                    return self.tmf_response(t.itt, tmf_response::NO_TASK, counted);
                }
                self.abort_tasks(|itt, _| itt == t.rtt)
            }
            tmf::ABORT_TASK_SET | tmf::CLEAR_TASK_SET => {
                if mapped.is_none() {
                    return self.tmf_response(t.itt, tmf_response::NO_LUN, counted);
                }
                self.abort_tasks(|_, l| l == t.lun)
            }
            tmf::LOGICAL_UNIT_RESET => {
                let Some(lu) = mapped else {
                    return self.tmf_response(t.itt, tmf_response::NO_LUN, counted);
                };
                // SPC-2 reservations end; persistent ones stay (SPC-4 §5.13.11.4);
                // every other nexus learns of the reset.
                lu.pr().reset();
                lu.attention_others(&self.session.nexus, LUN_RESET_OCCURRED);
                self.abort_tasks(|_, l| l == t.lun)
            }
            // Target resets, ACA and task reassignment (error recovery level 2) are not
            // supported.
            _ => return self.tmf_response(t.itt, tmf_response::NOT_SUPPORTED, counted),
        };
        if waiting.is_empty() {
            self.tmf_response(t.itt, tmf_response::COMPLETE, counted);
        } else {
            self.tmfs.push(PendingTmf {
                itt: t.itt,
                waiting,
                counted,
            });
        }
    }

    /// SendTargets (RFC 7143 §13.12 and appendix C); other keys are not understood in
    /// the full feature phase.
    pub(super) fn text(&mut self, t: Text<'_>, bhs: &[u8; BHS_LEN]) -> std::io::Result<()> {
        let Some(counted) = self.arrive(t.immediate, t.cmdsn) else {
            return Ok(());
        };
        if self.text.len() + t.data.len() > MAX_TEXT {
            self.reject(reject::PROTOCOL_ERROR, bhs);
            return Err(protocol(format!("text request over {MAX_TEXT} bytes")));
        }
        self.text.extend_from_slice(t.data);
        if counted {
            self.session.done();
        }
        let seq = self.seq();
        if t.cont {
            // More text follows: an empty response with a transfer tag asks for it.
            tpdu::text_response(
                &mut self.out,
                self.digests,
                false,
                false,
                t.lun,
                t.itt,
                1,
                seq,
                &[],
            );
            self.statsn = self.statsn.wrapping_add(1);
            return Ok(());
        }
        let req = std::mem::take(&mut self.text);
        let mut resp = Vec::new();
        match text::parse(&req) {
            Ok(pairs) => {
                for (k, v) in pairs {
                    if k == "SendTargets" {
                        self.send_targets(v, &mut resp);
                    } else {
                        text::push(&mut resp, k, NOT_UNDERSTOOD);
                    }
                }
            }
            Err(e) => {
                self.reject(reject::PROTOCOL_ERROR, bhs);
                return Err(protocol(e.to_string()));
            }
        }
        tpdu::text_response(
            &mut self.out,
            self.digests,
            true,
            false,
            t.lun,
            t.itt,
            RESERVED_TAG,
            seq,
            &resp,
        );
        self.statsn = self.statsn.wrapping_add(1);
        Ok(())
    }

    fn send_targets(&self, v: &str, out: &mut Vec<u8>) {
        let name = self.shared.target.name();
        let ours = v == "All"
            || v.eq_ignore_ascii_case(&name)
            || (v.is_empty() && !self.session.discovery);
        if !ours {
            return;
        }
        let addr = self
            .shared
            .config
            .portal
            .clone()
            .unwrap_or_else(|| portal(self.local));
        text::push(out, "TargetName", &name);
        text::push(out, "TargetAddress", &format!("{addr},1"));
    }

    pub(super) fn logout(&mut self, l: Logout) {
        let Some(counted) = self.arrive(l.immediate, l.cmdsn) else {
            return;
        };
        if counted {
            // A logout ends the session or the connection: nothing waits on the window.
            self.session.done();
        }
        match l.reason {
            logout::CLOSE_SESSION => {
                self.logout = Some(PendingLogout {
                    itt: l.itt,
                    session: true,
                })
            }
            logout::CLOSE_CONNECTION if l.cid == self.cid => {
                self.logout = Some(PendingLogout {
                    itt: l.itt,
                    session: false,
                })
            }
            logout::CLOSE_CONNECTION => {
                let r = if self.session.kill_conn(l.cid) {
                    logout_response::OK
                } else {
                    logout_response::CID_NOT_FOUND
                };
                self.logout_reply(l.itt, r);
            }
            _ => self.logout_reply(l.itt, logout_response::RECOVERY_UNSUPPORTED),
        }
    }

    fn logout_reply(&mut self, itt: u32, response: u8) {
        let seq = self.seq();
        tpdu::logout_response(&mut self.out, self.digests, itt, response, seq);
        self.statsn = self.statsn.wrapping_add(1);
    }

    /// Every task of the connection has ended: answer the logout; the caller closes.
    pub(super) fn finish_logout(&mut self) {
        if let Some(l) = self.logout.take() {
            self.logout_reply(l.itt, logout_response::OK);
            if l.session {
                self.session.kill_all();
            }
        }
    }
}
