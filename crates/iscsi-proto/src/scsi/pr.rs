//! Reservations of one logical unit as a pure state machine: SPC-4 persistent
//! reservations (PERSISTENT RESERVE OUT's REGISTER, REGISTER AND IGNORE EXISTING KEY,
//! RESERVE, RELEASE, CLEAR, PREEMPT; PERSISTENT RESERVE IN's READ KEYS, READ
//! RESERVATION, REPORT CAPABILITIES, READ FULL STATUS) and SPC-2's RESERVE/RELEASE,
//! plus the access check every command passes (SPC-4 §5.13.1.2, SBC-3 table 13).
//!
//! `N` names an I_T nexus (the target keys it by initiator port and target port). The
//! operations return the unit attentions they cause for other nexuses; the caller
//! queues them. Registrations are not persisted (APTPL is refused), so they end with the
//! process, as an LU without non-volatile storage for them would.

use super::sense::{self, Asc, Sense};
use crate::be;

/// Reservation types.
pub mod kind {
    pub const WRITE_EXCLUSIVE: u8 = 1;
    pub const EXCLUSIVE_ACCESS: u8 = 3;
    pub const WRITE_EXCLUSIVE_REGISTRANTS_ONLY: u8 = 5;
    pub const EXCLUSIVE_ACCESS_REGISTRANTS_ONLY: u8 = 6;
    pub const WRITE_EXCLUSIVE_ALL_REGISTRANTS: u8 = 7;
    pub const EXCLUSIVE_ACCESS_ALL_REGISTRANTS: u8 = 8;
}

/// PERSISTENT RESERVE OUT service actions.
pub mod out {
    pub const REGISTER: u8 = 0;
    pub const RESERVE: u8 = 1;
    pub const RELEASE: u8 = 2;
    pub const CLEAR: u8 = 3;
    pub const PREEMPT: u8 = 4;
    pub const PREEMPT_AND_ABORT: u8 = 5;
    pub const REGISTER_AND_IGNORE: u8 = 6;
    pub const REGISTER_AND_MOVE: u8 = 7;
}

/// Most registrations one LU keeps; more get INSUFFICIENT REGISTRATION RESOURCES.
pub const MAX_REGISTRATIONS: usize = 256;

const INSUFFICIENT_REGISTRATION_RESOURCES: Asc = Asc {
    key: sense::key::ILLEGAL_REQUEST,
    asc: 0x55,
    ascq: 0x04,
};

/// How a command touches the medium, for the reservation check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Allowed under every reservation (INQUIRY, REPORT LUNS, REQUEST SENSE, ...).
    Always,
    /// Allowed under any persistent reservation, not under another nexus's SPC-2
    /// RESERVE: READ CAPACITY, TEST UNIT READY.
    Status,
    Read,
    Write,
    /// PERSISTENT RESERVE IN/OUT: governed by their own rules.
    Persistent,
    /// RESERVE(6)/RELEASE(6).
    Legacy,
}

/// Why a command may not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// RESERVATION CONFLICT status.
    Conflict,
    /// CHECK CONDITION with this sense.
    Sense(Sense),
}

impl From<Sense> for Refusal {
    fn from(s: Sense) -> Refusal {
        Refusal::Sense(s)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Registration<N> {
    nexus: N,
    key: u64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Reservation<N> {
    /// The holder; `None` for the all-registrants types (every registrant holds it).
    holder: Option<N>,
    kind: u8,
}

/// Reservation state of one logical unit.
#[derive(Debug, Clone)]
pub struct Reservations<N> {
    generation: u32,
    registrations: Vec<Registration<N>>,
    reservation: Option<Reservation<N>>,
    /// SPC-2 RESERVE(6)/(10) holder.
    legacy: Option<N>,
}

impl<N> Default for Reservations<N> {
    fn default() -> Self {
        Reservations {
            generation: 0,
            registrations: Vec::new(),
            reservation: None,
            legacy: None,
        }
    }
}

/// The PERSISTENT RESERVE OUT basic parameter list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutParams {
    pub key: u64,
    pub sa_key: u64,
    pub spec_i_pt: bool,
    pub all_tg_pt: bool,
    pub aptpl: bool,
}

/// Decodes the 24-byte basic parameter list of PERSISTENT RESERVE OUT.
pub fn out_params(p: &[u8]) -> Result<OutParams, Sense> {
    if p.len() != 24 {
        return Err(Sense::new(sense::PARAMETER_LIST_LENGTH_ERROR));
    }
    Ok(OutParams {
        key: be::u64(&p[0..8]),
        sa_key: be::u64(&p[8..16]),
        spec_i_pt: p[20] & 0x08 != 0,
        all_tg_pt: p[20] & 0x04 != 0,
        aptpl: p[20] & 0x01 != 0,
    })
}

fn all_registrants(kind: u8) -> bool {
    matches!(
        kind,
        kind::WRITE_EXCLUSIVE_ALL_REGISTRANTS | kind::EXCLUSIVE_ACCESS_ALL_REGISTRANTS
    )
}

fn registrants_type(kind: u8) -> bool {
    matches!(
        kind,
        kind::WRITE_EXCLUSIVE_REGISTRANTS_ONLY
            | kind::EXCLUSIVE_ACCESS_REGISTRANTS_ONLY
            | kind::WRITE_EXCLUSIVE_ALL_REGISTRANTS
            | kind::EXCLUSIVE_ACCESS_ALL_REGISTRANTS
    )
}

fn valid_kind(kind: u8) -> bool {
    matches!(kind, 1 | 3 | 5..=8)
}

/// Unit attentions an operation causes: (nexus, condition).
pub type Attentions<N> = Vec<(N, Asc)>;

impl<N: Clone + Eq> Reservations<N> {
    fn key_of(&self, n: &N) -> Option<u64> {
        self.registrations
            .iter()
            .find(|r| &r.nexus == n)
            .map(|r| r.key)
    }

    fn is_holder(&self, n: &N) -> bool {
        match &self.reservation {
            Some(Reservation {
                holder: Some(h), ..
            }) => h == n,
            Some(Reservation { holder: None, .. }) => self.key_of(n).is_some(),
            None => false,
        }
    }

    /// Whether a command of `access` from `n` may run now.
    pub fn check(&self, n: &N, access: Access) -> Result<(), Refusal> {
        if access == Access::Always {
            return Ok(());
        }
        if let Some(h) = &self.legacy {
            // SPC-2: everything but the always-allowed commands conflicts for others;
            // RELEASE from another nexus is a no-op that succeeds.
            if h != n && access != Access::Legacy {
                return Err(Refusal::Conflict);
            }
            return Ok(());
        }
        if access == Access::Legacy {
            // Compatible reservation handling: RESERVE/RELEASE conflict with a
            // persistent reservation, and RESERVE with any registration.
            if self.reservation.is_some() || !self.registrations.is_empty() {
                return Err(Refusal::Conflict);
            }
            return Ok(());
        }
        let Some(r) = &self.reservation else {
            return Ok(());
        };
        if matches!(access, Access::Persistent | Access::Status) || self.is_holder(n) {
            return Ok(());
        }
        let registered = self.key_of(n).is_some();
        let exclusive_access = matches!(
            r.kind,
            kind::EXCLUSIVE_ACCESS
                | kind::EXCLUSIVE_ACCESS_REGISTRANTS_ONLY
                | kind::EXCLUSIVE_ACCESS_ALL_REGISTRANTS
        );
        let allowed = match access {
            Access::Read => !exclusive_access || (registrants_type(r.kind) && registered),
            _ => registrants_type(r.kind) && registered,
        };
        if allowed {
            Ok(())
        } else {
            Err(Refusal::Conflict)
        }
    }

    /// RESERVE(6)/(10).
    pub fn reserve_legacy(&mut self, n: &N) -> Result<(), Refusal> {
        if self.legacy.as_ref().is_some_and(|h| h != n) {
            return Err(Refusal::Conflict);
        }
        self.check(n, Access::Legacy)?;
        self.legacy = Some(n.clone());
        Ok(())
    }

    /// RELEASE(6)/(10): releases only the holder's reservation; a no-op otherwise.
    pub fn release_legacy(&mut self, n: &N) -> Result<(), Refusal> {
        if self.legacy.as_ref() == Some(n) {
            self.legacy = None;
        } else if self.legacy.is_none() && self.reservation.is_some() {
            return Err(Refusal::Conflict);
        }
        Ok(())
    }

    /// The nexus is gone (logout, connection loss): its SPC-2 reservation ends.
    /// Persistent registrations stay, as SPC-4 requires.
    pub fn nexus_lost(&mut self, n: &N) {
        if self.legacy.as_ref() == Some(n) {
            self.legacy = None;
        }
    }

    /// LOGICAL UNIT RESET: releases an SPC-2 reservation (persistent ones stay).
    pub fn reset(&mut self) {
        self.legacy = None;
    }

    /// PERSISTENT RESERVE OUT. `scope` and `kind` come from the CDB.
    pub fn out(
        &mut self,
        n: &N,
        action: u8,
        scope: u8,
        kind: u8,
        p: &OutParams,
    ) -> Result<Attentions<N>, Refusal> {
        if self.legacy.as_ref().is_some_and(|h| h != n) {
            return Err(Refusal::Conflict);
        }
        if p.spec_i_pt {
            return Err(Sense::param_field(20).into());
        }
        if p.all_tg_pt || p.aptpl {
            // One target port, and no non-volatile store for registrations.
            return Err(Sense::param_field(20).into());
        }
        let needs_type = matches!(action, out::RESERVE | out::RELEASE)
            || (matches!(action, out::PREEMPT | out::PREEMPT_AND_ABORT));
        if needs_type && (scope != 0 || !valid_kind(kind)) {
            return Err(Sense::cdb_field(2).into());
        }
        match action {
            out::REGISTER | out::REGISTER_AND_IGNORE => {
                self.register(n, p, action == out::REGISTER_AND_IGNORE)
            }
            out::RESERVE => {
                self.owner_check(n, p.key)?;
                match &self.reservation {
                    None => {
                        self.reservation = Some(Reservation {
                            holder: (!all_registrants(kind)).then(|| n.clone()),
                            kind,
                        });
                        Ok(Vec::new())
                    }
                    Some(r) if self.is_holder(n) && r.kind == kind => Ok(Vec::new()),
                    Some(_) => Err(Refusal::Conflict),
                }
            }
            out::RELEASE => {
                self.owner_check(n, p.key)?;
                let Some(r) = self.reservation.clone() else {
                    return Ok(Vec::new());
                };
                if !self.is_holder(n) {
                    return Ok(Vec::new());
                }
                if r.kind != kind {
                    return Err(Sense::new(sense::INVALID_RELEASE_OF_PR).into());
                }
                self.reservation = None;
                Ok(if registrants_type(r.kind) {
                    self.others(n, sense::RESERVATIONS_RELEASED)
                } else {
                    Vec::new()
                })
            }
            out::CLEAR => {
                self.owner_check(n, p.key)?;
                let ua = self.others(n, sense::RESERVATIONS_PREEMPTED);
                self.registrations.clear();
                self.reservation = None;
                self.generation = self.generation.wrapping_add(1);
                Ok(ua)
            }
            out::PREEMPT | out::PREEMPT_AND_ABORT => self.preempt(n, kind, p),
            _ => Err(Sense::cdb_field(1).into()),
        }
    }

    /// The nexus must be registered under `key`.
    fn owner_check(&self, n: &N, key: u64) -> Result<(), Refusal> {
        match self.key_of(n) {
            Some(k) if k == key => Ok(()),
            _ => Err(Refusal::Conflict),
        }
    }

    /// Every registered nexus but `n`, with `asc`.
    fn others(&self, n: &N, asc: Asc) -> Attentions<N> {
        self.registrations
            .iter()
            .filter(|r| &r.nexus != n)
            .map(|r| (r.nexus.clone(), asc))
            .collect()
    }

    fn register(&mut self, n: &N, p: &OutParams, ignore: bool) -> Result<Attentions<N>, Refusal> {
        let current = self.key_of(n);
        match current {
            None if !ignore && p.key != 0 => return Err(Refusal::Conflict),
            Some(k) if !ignore && k != p.key => return Err(Refusal::Conflict),
            _ => {}
        }
        let mut ua = Vec::new();
        match (current, p.sa_key) {
            (None, 0) => return Ok(ua),
            (None, key) => {
                if self.registrations.len() >= MAX_REGISTRATIONS {
                    return Err(Sense::new(INSUFFICIENT_REGISTRATION_RESOURCES).into());
                }
                self.registrations.push(Registration {
                    nexus: n.clone(),
                    key,
                });
            }
            (Some(_), 0) => {
                ua = self.unregister(n);
            }
            (Some(_), key) => {
                for r in self.registrations.iter_mut().filter(|r| &r.nexus == n) {
                    r.key = key;
                }
            }
        }
        self.generation = self.generation.wrapping_add(1);
        Ok(ua)
    }

    /// Removes `n`'s registration, releasing a reservation it held (SPC-4 §5.13.11.3).
    fn unregister(&mut self, n: &N) -> Attentions<N> {
        let held = self
            .reservation
            .as_ref()
            .map(|r| (r.holder.as_ref() == Some(n), r.kind));
        self.registrations.retain(|r| &r.nexus != n);
        let mut ua = Vec::new();
        match held {
            Some((true, kind)) => {
                self.reservation = None;
                if registrants_type(kind) {
                    ua = self.others(n, sense::RESERVATIONS_RELEASED);
                }
            }
            Some((false, kind)) if all_registrants(kind) && self.registrations.is_empty() => {
                self.reservation = None;
            }
            _ => {}
        }
        ua
    }

    fn preempt(&mut self, n: &N, kind: u8, p: &OutParams) -> Result<Attentions<N>, Refusal> {
        self.owner_check(n, p.key)?;
        let mut ua = Vec::new();
        let mut remove = |regs: &mut Vec<Registration<N>>,
                          pred: &dyn Fn(&Registration<N>) -> bool| {
            let mut removed = 0;
            regs.retain(|r| {
                if &r.nexus != n && pred(r) {
                    ua.push((r.nexus.clone(), sense::REGISTRATIONS_PREEMPTED));
                    removed += 1;
                    false
                } else {
                    true
                }
            });
            removed
        };
        match self.reservation.clone() {
            Some(r) if r.holder.is_none() => {
                // All-registrants: SARK 0 preempts every other registrant and takes the
                // reservation; another key just removes those registrations.
                if p.sa_key == 0 {
                    remove(&mut self.registrations, &|_| true);
                    self.reservation = Some(Reservation {
                        holder: (!all_registrants(kind)).then(|| n.clone()),
                        kind,
                    });
                } else {
                    remove(&mut self.registrations, &|r| r.key == p.sa_key);
                }
            }
            Some(r) => {
                let holder_key = r.holder.as_ref().and_then(|h| self.key_of(h));
                if holder_key == Some(p.sa_key) {
                    remove(&mut self.registrations, &|r| r.key == p.sa_key);
                    self.reservation = Some(Reservation {
                        holder: (!all_registrants(kind)).then(|| n.clone()),
                        kind,
                    });
                } else {
                    if p.sa_key == 0 {
                        return Err(Sense::param_field(8).into());
                    }
                    if remove(&mut self.registrations, &|r| r.key == p.sa_key) == 0 {
                        return Err(Refusal::Conflict);
                    }
                }
            }
            None => {
                if p.sa_key == 0 {
                    return Err(Sense::param_field(8).into());
                }
                if remove(&mut self.registrations, &|r| r.key == p.sa_key) == 0 {
                    return Err(Refusal::Conflict);
                }
            }
        }
        self.generation = self.generation.wrapping_add(1);
        Ok(ua)
    }

    /// PERSISTENT RESERVE IN. `transport_id` gives a nexus's TransportID (READ FULL
    /// STATUS).
    pub fn read(&self, action: u8, transport_id: &dyn Fn(&N) -> Vec<u8>) -> Result<Vec<u8>, Sense> {
        let mut d = self.generation.to_be_bytes().to_vec();
        match action {
            0 => {
                d.extend_from_slice(&((8 * self.registrations.len()) as u32).to_be_bytes());
                for r in &self.registrations {
                    d.extend_from_slice(&r.key.to_be_bytes());
                }
            }
            1 => match &self.reservation {
                None => d.extend_from_slice(&0u32.to_be_bytes()),
                Some(r) => {
                    d.extend_from_slice(&16u32.to_be_bytes());
                    let key = match &r.holder {
                        Some(h) => self.key_of(h).unwrap_or(0),
                        None => 0,
                    };
                    d.extend_from_slice(&key.to_be_bytes());
                    d.extend_from_slice(&[0, 0, 0, 0, 0, r.kind & 0x0f, 0, 0]);
                }
            },
            2 => {
                // REPORT CAPABILITIES: length 8; CRH; TMV with the six types.
                d = vec![
                    0,
                    8,
                    0x10,
                    0x80,
                    0x80 | 0x40 | 0x20 | 0x08 | 0x02,
                    0x01,
                    0,
                    0,
                ];
            }
            3 => {
                let mut body = Vec::new();
                for r in &self.registrations {
                    let holder = self.is_holder(&r.nexus);
                    body.extend_from_slice(&r.key.to_be_bytes());
                    body.extend_from_slice(&[0; 4]);
                    body.push(if holder { 0x01 } else { 0 });
                    body.push(match (&self.reservation, holder) {
                        (Some(res), true) => res.kind & 0x0f,
                        _ => 0,
                    });
                    body.extend_from_slice(&[0; 4]);
                    body.extend_from_slice(&1u16.to_be_bytes()); // relative target port
                    let tid = transport_id(&r.nexus);
                    body.extend_from_slice(&(tid.len() as u32).to_be_bytes());
                    body.extend_from_slice(&tid);
                }
                d.extend_from_slice(&(body.len() as u32).to_be_bytes());
                d.extend_from_slice(&body);
            }
            _ => return Err(Sense::cdb_field(1)),
        }
        Ok(d)
    }
}

/// An iSCSI TransportID with an ISID (SPC-4 §7.6.4.6, format 01b): the initiator's
/// `name,i,0xISID`, NUL terminated, padded to a multiple of 4.
pub fn iscsi_transport_id(port_name: &str) -> Vec<u8> {
    let mut name = port_name.as_bytes().to_vec();
    name.push(0);
    while !name.len().is_multiple_of(4) {
        name.push(0);
    }
    let mut t = vec![0x45, 0];
    t.extend_from_slice(&(name.len() as u16).to_be_bytes());
    t.extend_from_slice(&name);
    t
}

#[cfg(test)]
mod tests;
