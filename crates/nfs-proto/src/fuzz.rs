//! One entry point that runs every decoder on arbitrary bytes, for fuzzers (`fuzz/`) and
//! the pseudo-random test below: record marking, the RPC header and credential, and the
//! arguments of every procedure of the three programs, each decoded call also moved onto a
//! copy of its record ([`crate::moved`]). Panics only on a decoder bug.

use crate::moved::Moved;
use crate::{mount, nfs3, portmap, record, rpc};

/// Decodes `data` as a stream of records, then each record as a call and each call's
/// arguments as every procedure of its program (and as raw arguments of every procedure).
pub fn decode_all(data: &[u8]) {
    let mut rest = data;
    while let Ok(Some((rec, used))) = record::next_record(rest, 1 << 20) {
        decode_record(&rec);
        rest = &rest[used..];
    }
    decode_record(data);
}

fn decode_record(rec: &[u8]) {
    let copy = rec.to_vec();
    let m = Moved::new(rec, &copy);
    let msg = rpc::decode(rec);
    assert_eq!(format!("{msg:?}"), format!("{:?}", msg.moved(m)));
    if let rpc::Message::Call(c) = msg {
        let _ = nfs3::decode_args(c.proc_, c.args);
        let _ = mount::decode_args(c.proc_, c.args);
        let _ = portmap::decode_args(c.proc_, c.args);
    }
    for p in 0..23 {
        if let Ok(Some(a)) = nfs3::decode_args(p, rec) {
            let _ = a.handle();
            assert_eq!(a.moved(m), a, "moved onto a copy, the same arguments");
        }
        let _ = mount::decode_args(p, rec);
        let _ = portmap::decode_args(p, rec);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pseudo_random_inputs_never_panic() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for n in 0..50_000usize {
            let len = n % 300;
            let mut v = Vec::with_capacity(len);
            for _ in 0..len {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // small values are common in XDR: lengths, enums, bools
                v.push(if x.is_multiple_of(5) {
                    0
                } else {
                    (x >> 32) as u8
                });
            }
            super::decode_all(&v);
        }
    }
}
