//! Back-off for repeated authentication failures from one source.
//!
//! A source is a network, not one address: an IPv4 address's /24 (IPv4-mapped IPv6
//! addresses too) and an IPv6 address's /64 — what one attacker easily holds many
//! addresses of (the 12 loopback addresses made 60 guesses in 1.7 s).
//!
//! The rule (docs/SECURITY.md): a source may fail [`FREE_FAILURES`] times in a row; after that every further failure locks it out for a delay that starts at
//! [`FIRST_DELAY`] and doubles with each failure up to [`MAX_DELAY`]. While locked out,
//! its requests with credentials are refused with 429 and `Retry-After` without checking
//! them (no Argon2 run). A success clears the source's record; a record idle for
//! [`FORGET_AFTER`] is forgotten. Like ONTAP's `-max-failed-login-attempts` /
//! `-lockout-duration`, but per source rather than per account, so an attacker cannot
//! lock the administrator out from elsewhere. Time is passed in (testable without sleeping).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures in a row a source may have before it backs off.
pub const FREE_FAILURES: u32 = 5;
/// The lockout after the first failure past the free ones.
pub const FIRST_DELAY: Duration = Duration::from_secs(1);
/// The longest lockout.
pub const MAX_DELAY: Duration = Duration::from_secs(60);
/// A source idle this long starts afresh.
pub const FORGET_AFTER: Duration = Duration::from_secs(600);
/// Records kept at most (the oldest are dropped beyond it).
const MAX_SOURCES: usize = 65_536;

#[derive(Debug, Clone, Copy)]
struct Record {
    failures: u32,
    last: Instant,
    until: Option<Instant>,
}

/// Failure records by source.
#[derive(Default)]
pub struct Backoff {
    sources: Mutex<HashMap<IpAddr, Record>>,
}

/// The source an address belongs to: its /24 (IPv4 or IPv4-mapped) or its /64 (IPv6).
pub fn source(ip: IpAddr) -> IpAddr {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => IpAddr::V4((u32::from(v4) & 0xffff_ff00).into()),
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
    }
}

impl Backoff {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Record>> {
        self.sources.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `Err(wait)` while `ip` is locked out.
    pub fn check(&self, ip: IpAddr, now: Instant) -> Result<(), Duration> {
        match self.lock().get(&source(ip)).and_then(|r| r.until) {
            Some(until) if until > now => Err(until - now),
            _ => Ok(()),
        }
    }

    /// Record a failure; returns the lockout it starts, if any.
    pub fn failure(&self, ip: IpAddr, now: Instant) -> Option<Duration> {
        let ip = source(ip);
        let mut m = self.lock();
        if m.len() >= MAX_SOURCES {
            m.retain(|_, r| now.duration_since(r.last) < FORGET_AFTER);
            if m.len() >= MAX_SOURCES {
                if let Some(oldest) = m.iter().min_by_key(|(_, r)| r.last).map(|(k, _)| *k) {
                    m.remove(&oldest);
                }
            }
        }
        let r = m.entry(ip).or_insert(Record {
            failures: 0,
            last: now,
            until: None,
        });
        if now.duration_since(r.last) >= FORGET_AFTER {
            r.failures = 0;
        }
        r.failures += 1;
        r.last = now;
        let over = r.failures.saturating_sub(FREE_FAILURES);
        if over == 0 {
            return None;
        }
        let delay = FIRST_DELAY
            .saturating_mul(1u32 << (over - 1).min(16))
            .min(MAX_DELAY);
        r.until = Some(now + delay);
        Some(delay)
    }

    /// A success clears the source.
    pub fn success(&self, ip: IpAddr) {
        self.lock().remove(&source(ip));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule() {
        let b = Backoff::default();
        let ip: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "198.51.100.8".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..FREE_FAILURES {
            assert_eq!(b.failure(ip, t0), None);
            assert!(b.check(ip, t0).is_ok());
        }
        // The sixth failure locks out for 1 s, the next ones 2, 4, ... up to 60 s.
        assert_eq!(b.failure(ip, t0), Some(Duration::from_secs(1)));
        assert_eq!(b.check(ip, t0), Err(Duration::from_secs(1)));
        assert!(b.check(other, t0).is_ok(), "per source");
        let t1 = t0 + Duration::from_secs(1);
        assert!(b.check(ip, t1).is_ok());
        assert_eq!(b.failure(ip, t1), Some(Duration::from_secs(2)));
        let mut t = t1;
        let mut last = Duration::ZERO;
        for _ in 0..10 {
            t += Duration::from_secs(61);
            if let Some(d) = b.failure(ip, t) {
                last = d;
            }
        }
        assert_eq!(last, MAX_DELAY);
        // A success clears it; so does a long silence.
        b.success(ip);
        assert!(b.check(ip, t).is_ok());
        for _ in 0..FREE_FAILURES {
            b.failure(other, t);
        }
        let later = t + FORGET_AFTER;
        assert_eq!(b.failure(other, later), None);
    }

    #[test]
    fn a_source_is_a_24_or_a_64() {
        let b = Backoff::default();
        let t0 = Instant::now();
        // 12 loopback addresses are one source, as are an IPv4 /24 and its mapped form.
        for i in 0..FREE_FAILURES {
            b.failure(format!("127.0.0.{}", i + 1).parse().unwrap(), t0);
        }
        assert!(b.failure("127.0.0.12".parse().unwrap(), t0).is_some());
        assert!(b.check("::ffff:127.0.0.200".parse().unwrap(), t0).is_err());
        assert!(b.check("127.0.1.1".parse().unwrap(), t0).is_ok());
        for i in 0..=FREE_FAILURES {
            b.failure(format!("2001:db8::{:x}", i + 1).parse().unwrap(), t0);
        }
        assert!(b.check("2001:db8::ffff:1".parse().unwrap(), t0).is_err());
        assert!(b.check("2001:db8:0:1::1".parse().unwrap(), t0).is_ok());
        assert_eq!(
            source("10.1.2.3".parse().unwrap()),
            "10.1.2.0".parse::<IpAddr>().unwrap()
        );
    }
}
