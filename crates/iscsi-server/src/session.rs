//! Sessions: identified by the initiator's name and ISID and the target's TSIH, holding
//! the session-wide command window (CmdSN/ExpCmdSN/MaxCmdSN across all its connections)
//! and the LUNs its initiator may see.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use iscsi_proto::negotiate::Params;
use iscsi_proto::pdu::target::Seq;
use iscsi_proto::scsi::sense::REPORTED_LUNS_CHANGED;
use storage_node::locks::lock;
use tokio::sync::watch;

use crate::lu::{LogicalUnit, Nexus};
use crate::target::{Mapped, Target};

/// Serial number arithmetic (RFC 1982, 32 bits): `a` is after `b`.
pub fn sn_gt(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000_0000
}

/// Where a command's CmdSN falls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// In the window and new: run it.
    Run,
    /// Outside the window or already received: silently ignored (RFC 7143 §4.2.2.1).
    Ignore,
}

/// The session's command window.
#[derive(Debug)]
struct Window {
    exp: u32,
    max: u32,
    /// CmdSNs received above `exp` (commands on several connections arrive out of order).
    ahead: BTreeSet<u32>,
    /// Non-immediate commands received and not yet answered.
    in_flight: u32,
    size: u32,
}

impl Window {
    fn widen(&mut self) {
        let room = self.size.saturating_sub(self.in_flight).max(1);
        let candidate = self.exp.wrapping_add(room).wrapping_sub(1);
        if sn_gt(candidate, self.max) {
            self.max = candidate;
        }
    }
}

/// One session.
pub struct Session {
    pub tsih: u16,
    pub isid: [u8; 6],
    pub initiator: String,
    pub nexus: Nexus,
    pub discovery: bool,
    /// Session-wide parameters negotiated by the leading login.
    pub params: Params,
    window: Mutex<Window>,
    exp_cmdsn: AtomicU32,
    max_cmdsn: AtomicU32,
    /// Connections by CID, each with the switch that ends it.
    conns: Mutex<HashMap<u16, watch::Sender<bool>>>,
    luns: Mutex<(u64, Arc<Vec<Mapped>>)>,
    pub(crate) ended: AtomicBool,
}

impl Session {
    pub(crate) fn new(
        tsih: u16,
        isid: [u8; 6],
        initiator: &str,
        discovery: bool,
        params: Params,
        cmdsn: u32,
        window: u32,
    ) -> Session {
        let isid_hex: String = isid.iter().map(|b| format!("{b:02x}")).collect();
        let mut w = Window {
            exp: cmdsn,
            max: cmdsn.wrapping_sub(1),
            ahead: BTreeSet::new(),
            in_flight: 0,
            size: window.max(1),
        };
        w.widen();
        Session {
            tsih,
            isid,
            initiator: initiator.to_string(),
            nexus: format!("{initiator},i,0x{isid_hex}").into(),
            discovery,
            params,
            exp_cmdsn: AtomicU32::new(w.exp),
            max_cmdsn: AtomicU32::new(w.max),
            window: Mutex::new(w),
            conns: Mutex::new(HashMap::new()),
            luns: Mutex::new((u64::MAX, Arc::new(Vec::new()))),
            ended: AtomicBool::new(false),
        }
    }

    /// The window as target PDUs carry it, with a connection's StatSN.
    pub fn seq(&self, statsn: u32) -> Seq {
        Seq {
            statsn,
            exp_cmdsn: self.exp_cmdsn.load(Ordering::Acquire),
            max_cmdsn: self.max_cmdsn.load(Ordering::Acquire),
        }
    }

    fn publish(&self, w: &Window) {
        self.exp_cmdsn.store(w.exp, Ordering::Release);
        self.max_cmdsn.store(w.max, Ordering::Release);
    }

    /// A non-immediate command arrived with `cmdsn`.
    pub fn arrive(&self, cmdsn: u32) -> Admit {
        let mut guard = lock(&self.window);
        let w = &mut *guard;
        let in_window = !sn_gt(w.exp, cmdsn) && !sn_gt(cmdsn, w.max);
        if !in_window || w.ahead.contains(&cmdsn) {
            return Admit::Ignore;
        }
        w.ahead.insert(cmdsn);
        while w.ahead.remove(&w.exp) {
            w.exp = w.exp.wrapping_add(1);
        }
        w.in_flight += 1;
        w.widen();
        self.publish(w);
        Admit::Run
    }

    /// A non-immediate command was answered (or ended without an answer): the window
    /// opens by one.
    pub fn done(&self) {
        let mut w = lock(&self.window);
        w.in_flight = w.in_flight.saturating_sub(1);
        w.widen();
        self.publish(&w);
    }

    /// Registers a connection; `false` if the session has ended or is full.
    pub(crate) fn add_conn(&self, cid: u16, kill: watch::Sender<bool>, max: u16) -> bool {
        let mut c = lock(&self.conns);
        if self.ended.load(Ordering::Acquire) {
            return false;
        }
        if let Some(old) = c.remove(&cid) {
            // Connection reinstatement: the old connection with this CID ends.
            let _ = old.send(true);
        }
        if c.len() >= max as usize {
            return false;
        }
        c.insert(cid, kill);
        true
    }

    /// Removes a connection; `true` when it was the last one (the session ends).
    pub(crate) fn remove_conn(&self, cid: u16) -> bool {
        let mut c = lock(&self.conns);
        c.remove(&cid);
        if c.is_empty() {
            self.ended.store(true, Ordering::Release);
            true
        } else {
            false
        }
    }

    /// Ends connection `cid` (logout of another connection); `false` if there is none.
    pub(crate) fn kill_conn(&self, cid: u16) -> bool {
        match lock(&self.conns).get(&cid) {
            Some(k) => {
                let _ = k.send(true);
                true
            }
            None => false,
        }
    }

    /// Ends every connection (session reinstatement, logout of the session).
    pub(crate) fn kill_all(&self) {
        self.ended.store(true, Ordering::Release);
        for k in lock(&self.conns).values() {
            let _ = k.send(true);
        }
    }

    /// The LUNs this session sees, re-read when the target's mappings changed (each LU
    /// then holds REPORTED LUNS DATA HAS CHANGED for this nexus).
    pub fn luns(&self, target: &dyn Target) -> Arc<Vec<Mapped>> {
        let generation = target.generation();
        let mut l = lock(&self.luns);
        if l.0 != generation {
            let fresh = Arc::new(target.luns(&self.initiator));
            if l.0 != u64::MAX {
                for (_, lu) in fresh.iter() {
                    lu.attention(&self.nexus, REPORTED_LUNS_CHANGED);
                }
            }
            *l = (generation, fresh);
        }
        l.1.clone()
    }

    /// The numbers of the LUNs this session sees (REPORT LUNS).
    pub fn lun_numbers(&self, target: &dyn Target) -> Vec<u16> {
        self.luns(target).iter().map(|(n, _)| *n).collect()
    }

    pub fn lu(&self, target: &dyn Target, lun: u16) -> Option<Arc<LogicalUnit>> {
        self.luns(target)
            .iter()
            .find(|(n, _)| *n == lun)
            .map(|(_, lu)| lu.clone())
    }
}

/// Every session of the target.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<u16, Arc<Session>>>,
    next: Mutex<u16>,
}

impl Sessions {
    /// A fresh TSIH (never 0, never one in use).
    pub(crate) fn tsih(&self) -> u16 {
        let map = lock(&self.map);
        let mut n = lock(&self.next);
        loop {
            *n = n.wrapping_add(1);
            if *n != 0 && !map.contains_key(&*n) {
                return *n;
            }
        }
    }

    pub(crate) fn get(&self, tsih: u16) -> Option<Arc<Session>> {
        lock(&self.map).get(&tsih).cloned()
    }

    /// Adds `s`, first ending any session of the same initiator and ISID (session
    /// reinstatement, RFC 7143 §6.3.5).
    pub(crate) fn insert(&self, s: Arc<Session>) -> Option<Arc<Session>> {
        let mut map = lock(&self.map);
        let old = map
            .values()
            .find(|o| o.isid == s.isid && o.initiator.eq_ignore_ascii_case(&s.initiator))
            .cloned();
        if let Some(o) = &old {
            map.remove(&o.tsih);
            o.kill_all();
        }
        map.insert(s.tsih, s);
        old
    }

    pub(crate) fn remove(&self, tsih: u16) {
        lock(&self.map).remove(&tsih);
    }

    pub fn count(&self) -> usize {
        lock(&self.map).len()
    }

    /// Asks every session to end (the target stops).
    pub(crate) fn end_all(&self) {
        for s in lock(&self.map).values() {
            s.kill_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(cmdsn: u32, window: u32) -> Session {
        Session::new(1, [0; 6], "iqn.x", false, Params::default(), cmdsn, window)
    }

    #[test]
    fn window_admits_in_order_out_of_order_and_ignores_the_rest() {
        let s = session(10, 4);
        assert_eq!((s.seq(0).exp_cmdsn, s.seq(0).max_cmdsn), (10, 13));
        assert_eq!(s.arrive(14), Admit::Ignore, "above MaxCmdSN");
        assert_eq!(s.arrive(9), Admit::Ignore, "below ExpCmdSN");
        assert_eq!(s.arrive(11), Admit::Run, "ahead, another connection's");
        assert_eq!(s.seq(0).exp_cmdsn, 10);
        assert_eq!(s.arrive(11), Admit::Ignore, "duplicate");
        assert_eq!(s.arrive(10), Admit::Run);
        assert_eq!(s.seq(0).exp_cmdsn, 12);
        // Two in flight of a window of 4: MaxCmdSN = 12 + 4 - 2 - 1 = 13 (never lower).
        assert_eq!(s.seq(0).max_cmdsn, 13);
        s.done();
        s.done();
        assert_eq!(s.seq(0).max_cmdsn, 15);
    }

    #[test]
    fn window_wraps() {
        let s = session(u32::MAX - 1, 8);
        for sn in [u32::MAX - 1, u32::MAX, 0, 1] {
            assert_eq!(s.arrive(sn), Admit::Run, "{sn}");
            s.done();
        }
        assert_eq!(s.seq(0).exp_cmdsn, 2);
        assert!(sn_gt(0, u32::MAX) && !sn_gt(u32::MAX, 0));
    }

    #[test]
    fn nexus_names_the_initiator_port() {
        let s = Session::new(
            7,
            [0x80, 1, 2, 3, 4, 5],
            "iqn.a:b",
            false,
            Params::default(),
            0,
            8,
        );
        assert_eq!(&*s.nexus, "iqn.a:b,i,0x800102030405");
    }
}
