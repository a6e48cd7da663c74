//! Counting what a broker moved: the producer's acknowledged sends against the consumer's
//! receipts, by message id (producer prefix and sequence number). Pure.

use std::collections::HashSet;

/// One iteration's accounting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Acknowledged sends (the producer logged them after `send` returned).
    pub sent: u64,
    /// Distinct messages of this producer received.
    pub received: u64,
    /// Acknowledged sends never received.
    pub lost: u64,
    /// The first lost sequence number.
    pub first_lost: Option<u64>,
    /// Messages received more than once.
    pub duplicates: u64,
    /// Messages received after one with a higher sequence number.
    pub out_of_order: u64,
    /// Messages of other producers (left in the destination by an earlier iteration).
    pub stale: u64,
}

/// Count `received` (prefix, sequence) against the producer `prefix`'s `sent` sequences.
/// A message this producer sent but had not logged yet when it was stopped is received
/// without having been counted as sent: delivered, never lost.
pub fn tally(prefix: Option<&str>, sent: &[u64], received: &[(&str, u64)]) -> Tally {
    let mut t = Tally {
        sent: sent.len() as u64,
        ..Tally::default()
    };
    let mut seen = HashSet::with_capacity(received.len());
    let mut highest: Option<u64> = None;
    for &(p, s) in received {
        if Some(p) != prefix {
            t.stale += 1;
            continue;
        }
        if !seen.insert(s) {
            t.duplicates += 1;
            continue;
        }
        if highest.is_some_and(|h| s < h) {
            t.out_of_order += 1;
        }
        highest = Some(highest.map_or(s, |h| h.max(s)));
    }
    t.received = seen.len() as u64;
    for &s in sent {
        if !seen.contains(&s) {
            t.lost += 1;
            t.first_lost.get_or_insert(s);
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check() {
        let p = Some("ID:a:1:1:1");
        // Everything delivered in order, one extra the producer had not logged.
        let t = tally(
            p,
            &[1, 2, 3],
            &[
                ("ID:a:1:1:1", 1),
                ("ID:a:1:1:1", 2),
                ("ID:a:1:1:1", 3),
                ("ID:a:1:1:1", 4),
            ],
        );
        assert_eq!(
            (t.sent, t.received, t.lost, t.duplicates, t.out_of_order),
            (3, 4, 0, 0, 0)
        );
        // One lost, one duplicate, one out of order, one stale from an earlier producer.
        let t = tally(
            p,
            &[1, 2, 3, 4],
            &[
                ("ID:old:1:1:1", 9),
                ("ID:a:1:1:1", 1),
                ("ID:a:1:1:1", 3),
                ("ID:a:1:1:1", 2),
                ("ID:a:1:1:1", 3),
            ],
        );
        assert_eq!(
            t,
            Tally {
                sent: 4,
                received: 3,
                lost: 1,
                first_lost: Some(4),
                duplicates: 1,
                out_of_order: 1,
                stale: 1,
            }
        );
        // No producer: everything received is stale.
        assert_eq!(tally(None, &[], &[("ID:x", 1)]).stale, 1);
    }
}
