//! Operational parameter negotiation (RFC 7143 §6.2, §13) from the target's side.
//!
//! The initiator offers; the target answers each negotiated key with the result of the
//! key's function applied to the offer and its own value (minimum, maximum, OR, AND, or
//! the first value of an offered list it supports). Declarative keys (the initiator's
//! MaxRecvDataSegmentLength) are recorded without an answer. Unknown keys are answered
//! `NotUnderstood`, out-of-range values `Reject`, keys that do not apply to a discovery
//! session `Irrelevant`. A key offered twice in one login is an initiator error.

use std::collections::HashSet;

use crate::text::{IRRELEVANT, NOT_UNDERSTOOD, REJECT};

/// The target's side of each negotiated key: its limits and what it supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TargetLimits {
    /// The largest data segment this target receives (declared to the initiator).
    pub max_recv_data_segment_length: u32,
    pub max_burst_length: u32,
    pub first_burst_length: u32,
    pub max_connections: u16,
    pub max_outstanding_r2t: u16,
    /// The target accepts immediate data.
    pub immediate_data: bool,
    /// The target accepts unsolicited Data-Out (InitialR2T=No).
    pub unsolicited_data: bool,
    pub crc32c_header: bool,
    pub crc32c_data: bool,
    pub default_time2wait: u16,
    pub default_time2retain: u16,
}

impl Default for TargetLimits {
    fn default() -> Self {
        TargetLimits {
            max_recv_data_segment_length: 256 * 1024,
            max_burst_length: 1024 * 1024,
            first_burst_length: 256 * 1024,
            max_connections: 8,
            max_outstanding_r2t: 16,
            immediate_data: true,
            unsolicited_data: true,
            crc32c_header: true,
            crc32c_data: true,
            default_time2wait: 2,
            default_time2retain: 0,
        }
    }
}

/// The operational parameters of a session and connection, RFC 7143's defaults until
/// negotiated otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    pub header_digest: bool,
    pub data_digest: bool,
    pub max_connections: u16,
    pub initial_r2t: bool,
    pub immediate_data: bool,
    /// The initiator's MaxRecvDataSegmentLength: the largest data segment we may send.
    pub initiator_mrdsl: u32,
    /// Ours: the largest data segment we accept.
    pub target_mrdsl: u32,
    pub max_burst_length: u32,
    pub first_burst_length: u32,
    pub default_time2wait: u16,
    pub default_time2retain: u16,
    pub max_outstanding_r2t: u16,
    pub error_recovery_level: u8,
}

impl Default for Params {
    fn default() -> Self {
        Params {
            header_digest: false,
            data_digest: false,
            max_connections: 1,
            initial_r2t: true,
            immediate_data: true,
            initiator_mrdsl: 8192,
            target_mrdsl: 8192,
            max_burst_length: 262_144,
            first_burst_length: 65_536,
            default_time2wait: 2,
            default_time2retain: 20,
            max_outstanding_r2t: 1,
            error_recovery_level: 0,
        }
    }
}

/// A negotiation the target cannot continue: the login fails with "initiator error".
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum NegotiationError {
    #[error("key {0} was offered twice in one login")]
    Duplicate(String),
}

/// One login's negotiation state.
#[derive(Debug, Clone)]
pub struct Negotiation {
    pub limits: TargetLimits,
    pub params: Params,
    pub discovery: bool,
    seen: HashSet<String>,
    declared: bool,
}

/// Keys RFC 7143 makes irrelevant to a discovery session.
const NOT_FOR_DISCOVERY: &[&str] = &[
    "MaxConnections",
    "InitialR2T",
    "ImmediateData",
    "MaxBurstLength",
    "FirstBurstLength",
    "MaxOutstandingR2T",
    "DataPDUInOrder",
    "DataSequenceInOrder",
];

/// A number as RFC 7143 writes them: decimal or `0x` hexadecimal.
pub fn parse_number(v: &str) -> Option<u64> {
    if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        if h.is_empty() || h.len() > 16 {
            return None;
        }
        u64::from_str_radix(h, 16).ok()
    } else if !v.is_empty() && v.len() <= 20 && v.bytes().all(|c| c.is_ascii_digit()) {
        v.parse().ok()
    } else {
        None
    }
}

fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "Yes" => Some(true),
        "No" => Some(false),
        _ => None,
    }
}

fn yes_no(b: bool) -> String {
    if b { "Yes" } else { "No" }.to_string()
}

impl Negotiation {
    pub fn new(limits: TargetLimits, discovery: bool) -> Negotiation {
        let params = Params {
            target_mrdsl: limits.max_recv_data_segment_length,
            ..Params::default()
        };
        Negotiation {
            limits,
            params,
            discovery,
            seen: HashSet::new(),
            declared: false,
        }
    }

    /// The answer to one offered operational key: `Ok(None)` when none is due (a
    /// declaration). Login keys (names, session type, authentication) are the caller's.
    pub fn offer(&mut self, key: &str, value: &str) -> Result<Option<String>, NegotiationError> {
        if !self.seen.insert(key.to_string()) {
            return Err(NegotiationError::Duplicate(key.to_string()));
        }
        if self.discovery && NOT_FOR_DISCOVERY.contains(&key) {
            return Ok(Some(IRRELEVANT.into()));
        }
        let l = self.limits;
        let p = &mut self.params;
        let num = |lo: u64, hi: u64| parse_number(value).filter(|n| (lo..=hi).contains(n));
        // `None`: the value is not one the key allows (unparsable or out of range).
        let answer = match key {
            "HeaderDigest" | "DataDigest" => digest(p, &l, key, value),
            "MaxConnections" => num(1, 65535).map(|n| {
                p.max_connections = (n as u16).min(l.max_connections);
                p.max_connections.to_string()
            }),
            "InitialR2T" => parse_bool(value).map(|b| {
                p.initial_r2t = b || !l.unsolicited_data;
                yes_no(p.initial_r2t)
            }),
            "ImmediateData" => parse_bool(value).map(|b| {
                p.immediate_data = b && l.immediate_data;
                yes_no(p.immediate_data)
            }),
            "MaxRecvDataSegmentLength" => match num(512, 16_777_215) {
                Some(n) => {
                    p.initiator_mrdsl = n as u32;
                    return Ok(None);
                }
                None => None,
            },
            "MaxBurstLength" => num(512, 16_777_215).map(|n| {
                p.max_burst_length = (n as u32).min(l.max_burst_length);
                p.first_burst_length = p.first_burst_length.min(p.max_burst_length);
                p.max_burst_length.to_string()
            }),
            "FirstBurstLength" => num(512, 16_777_215).map(|n| {
                p.first_burst_length = (n as u32).min(l.first_burst_length).min(p.max_burst_length);
                p.first_burst_length.to_string()
            }),
            "DefaultTime2Wait" => num(0, 3600).map(|n| {
                p.default_time2wait = (n as u16).max(l.default_time2wait);
                p.default_time2wait.to_string()
            }),
            "DefaultTime2Retain" => num(0, 3600).map(|n| {
                p.default_time2retain = (n as u16).min(l.default_time2retain);
                p.default_time2retain.to_string()
            }),
            "MaxOutstandingR2T" => num(1, 65535).map(|n| {
                p.max_outstanding_r2t = (n as u16).min(l.max_outstanding_r2t);
                p.max_outstanding_r2t.to_string()
            }),
            // Only in-order data is supported: Yes OR anything is Yes.
            "DataPDUInOrder" | "DataSequenceInOrder" => parse_bool(value).map(|_| yes_no(true)),
            "ErrorRecoveryLevel" => num(0, 2).map(|_| {
                p.error_recovery_level = 0;
                "0".into()
            }),
            // Markers (RFC 3720; obsolete in RFC 7143): never used.
            "IFMarker" | "OFMarker" => parse_bool(value).map(|_| yes_no(false)),
            "IFMarkInt" | "OFMarkInt" => Some(IRRELEVANT.into()),
            "iSCSIProtocolLevel" => num(0, 31).map(|n| n.min(1).to_string()),
            "TaskReporting" => value
                .split(',')
                .any(|v| v == "RFC3720")
                .then(|| "RFC3720".into()),
            _ => Some(NOT_UNDERSTOOD.into()),
        };
        Ok(Some(answer.unwrap_or_else(|| REJECT.into())))
    }

    /// Declarations the target volunteers once, in its first operational answer: its own
    /// MaxRecvDataSegmentLength.
    pub fn declarations(&mut self) -> Vec<(&'static str, String)> {
        if self.declared {
            return Vec::new();
        }
        self.declared = true;
        vec![(
            "MaxRecvDataSegmentLength",
            self.params.target_mrdsl.to_string(),
        )]
    }

    /// The final parameters. FirstBurstLength never exceeds MaxBurstLength.
    pub fn finish(&self) -> Params {
        let mut p = self.params;
        p.first_burst_length = p.first_burst_length.min(p.max_burst_length);
        p
    }
}

/// A digest key: the first of the initiator's list the target allows (CRC32C only when
/// `limits` enable it for that digest), else `None` (Reject).
fn digest(p: &mut Params, l: &TargetLimits, key: &str, value: &str) -> Option<String> {
    let allow = if key == "HeaderDigest" {
        l.crc32c_header
    } else {
        l.crc32c_data
    };
    let pick = value
        .split(',')
        .find(|v| *v == "None" || (*v == "CRC32C" && allow));
    pick.map(|v| {
        let on = v == "CRC32C";
        if key == "HeaderDigest" {
            p.header_digest = on;
        } else {
            p.data_digest = on;
        }
        v.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answers(n: &mut Negotiation, offers: &[(&str, &str)]) -> Vec<Option<String>> {
        offers.iter().map(|(k, v)| n.offer(k, v).unwrap()).collect()
    }

    #[test]
    fn result_functions() {
        let mut n = Negotiation::new(TargetLimits::default(), false);
        let a = answers(
            &mut n,
            &[
                ("HeaderDigest", "CRC32C,None"),
                ("DataDigest", "None,CRC32C"),
                ("MaxConnections", "100"),
                ("InitialR2T", "No"),
                ("ImmediateData", "Yes"),
                ("MaxRecvDataSegmentLength", "65536"),
                ("MaxBurstLength", "16776192"),
                ("FirstBurstLength", "0x40000000"),
                ("DefaultTime2Wait", "0"),
                ("DefaultTime2Retain", "60"),
                ("MaxOutstandingR2T", "1"),
                ("DataPDUInOrder", "No"),
                ("ErrorRecoveryLevel", "2"),
                ("X-com.example.Foo", "1"),
                ("IFMarker", "Yes"),
            ],
        );
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            a,
            [
                s("CRC32C"),
                s("None"),
                s("8"),
                s("No"),
                s("Yes"),
                None,
                s("1048576"),
                s(REJECT), // above 2^24-1
                s("2"),
                s("0"),
                s("1"),
                s("Yes"),
                s("0"),
                s(NOT_UNDERSTOOD),
                s("No"),
            ]
        );
        let p = n.finish();
        assert!(p.header_digest && !p.data_digest && !p.initial_r2t && p.immediate_data);
        assert_eq!((p.initiator_mrdsl, p.max_burst_length), (65536, 1 << 20));
        assert_eq!(p.first_burst_length, 65536, "the default stays");
        assert_eq!(
            n.declarations(),
            [("MaxRecvDataSegmentLength", "262144".to_string())]
        );
        assert!(n.declarations().is_empty(), "declared once");
        assert_eq!(
            n.offer("HeaderDigest", "None"),
            Err(NegotiationError::Duplicate("HeaderDigest".into()))
        );
    }

    #[test]
    fn target_limits_decide_or_and_and() {
        let limits = TargetLimits {
            immediate_data: false,
            unsolicited_data: false,
            crc32c_data: false,
            ..TargetLimits::default()
        };
        let mut n = Negotiation::new(limits, false);
        let a = answers(
            &mut n,
            &[
                ("InitialR2T", "No"),
                ("ImmediateData", "Yes"),
                ("DataDigest", "CRC32C"),
                ("MaxBurstLength", "4096"),
                ("FirstBurstLength", "65536"),
                ("MaxConnections", "0"),
                ("HeaderDigest", "MD5"),
            ],
        );
        let s = |v: &str| Some(v.to_string());
        assert_eq!(
            a,
            [
                s("Yes"),
                s("No"),
                s(REJECT),
                s("4096"),
                s("4096"),
                s(REJECT),
                s(REJECT)
            ]
        );
    }

    #[test]
    fn discovery_sessions_find_session_keys_irrelevant() {
        let mut n = Negotiation::new(TargetLimits::default(), true);
        assert_eq!(
            n.offer("MaxBurstLength", "262144").unwrap().as_deref(),
            Some(IRRELEVANT)
        );
        assert_eq!(
            n.offer("HeaderDigest", "None").unwrap().as_deref(),
            Some("None")
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_number("8192"), Some(8192));
        assert_eq!(parse_number("0x2000"), Some(8192));
        for bad in ["", "0x", "-1", "1e3", " 1", "99999999999999999999999"] {
            assert_eq!(parse_number(bad), None, "{bad}");
        }
    }
}
