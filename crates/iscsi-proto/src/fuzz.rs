//! One entry point that runs every decoder on arbitrary bytes, for fuzzers (`fuzz/`) and
//! the pseudo-random test below: PDU framing (with and without digests), request
//! decoding, text pairs and their negotiation, CHAP values, CDBs, and the parameter
//! lists of UNMAP and PERSISTENT RESERVE OUT. Panics only on a decoder bug.

use crate::frame::{next_pdu, Digests};
use crate::negotiate::{Negotiation, TargetLimits};
use crate::pdu::Request;
use crate::scsi::{cdb, data, pr};
use crate::{chap, text};

/// Decodes `data` as a stream of PDUs (then each one's parts as everything else).
pub fn decode_all(input: &[u8]) {
    for digests in [
        Digests::default(),
        Digests {
            header: true,
            data: true,
        },
    ] {
        let mut rest = input;
        while let Ok(Some((p, used))) = next_pdu(rest, digests, 1 << 16) {
            if let Ok(r) = Request::decode(&p) {
                round_trip(&r);
            }
            decode_parts(p.data);
            rest = &rest[used..];
        }
    }
    decode_parts(input);
}

/// A decoded SCSI command re-encodes to one that decodes equal.
fn round_trip(r: &Request<'_>) {
    if let Request::ScsiCommand(c) = r {
        if !c.ext_cdb.is_empty() || c.bidi_read_len.is_some() {
            return;
        }
        let mut out = Vec::new();
        crate::pdu::initiator::scsi_command(&mut out, Digests::default(), c);
        let (p, _) = next_pdu(&out, Digests::default(), u32::MAX)
            .expect("re-encoded PDU frames")
            .expect("re-encoded PDU is complete");
        assert_eq!(&Request::decode(&p).expect("re-encoded PDU decodes"), r);
    }
}

fn decode_parts(d: &[u8]) {
    if let Ok(pairs) = text::parse(d) {
        let mut n = Negotiation::new(TargetLimits::default(), d.first() == Some(&0));
        for (k, v) in pairs {
            let _ = n.offer(k, v);
            let _ = chap::decode_binary(v);
        }
        let p = n.finish();
        assert!(p.first_burst_length <= p.max_burst_length);
    }
    let mut c = [0u8; 16];
    let n = d.len().min(16);
    c[..n].copy_from_slice(&d[..n]);
    if let Ok(cmd) = cdb::decode(&c) {
        let _ = (cmd.data_out_len(512), cmd.dir(4096), cmd.access());
    }
    let _ = data::unmap_list(d, 256);
    if let Ok(p) = pr::out_params(d.get(..24).unwrap_or(d)) {
        let mut r = pr::Reservations::<u8>::default();
        for action in 0..8 {
            let _ = r.out(&(action % 2), action, 0, d[0] & 0x0f, &p);
        }
        for action in 0..5 {
            let _ = r.read(action, &|_| Vec::new());
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pseudo_random_inputs_never_panic() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in 0..30_000usize {
            let len = n % 200;
            let mut v = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                v.push(if x.is_multiple_of(4) {
                    0
                } else {
                    (x >> 32) as u8
                });
            }
            super::decode_all(&v);
        }
    }
}
