//! nbd-proto's decoders ("never panic on any input", ARCHITECTURE.md): option headers,
//! NBD_OPT_INFO/GO and SET/LIST_META_CONTEXT payloads, request headers. Each decoded
//! request is re-encoded and must decode to itself.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nbd_proto::{decode_info_request, decode_meta_context_request, decode_option_header};
use nbd_proto::{decode_request, encode_request};

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    match sel % 4 {
        0 => {
            if let Ok(h) = <&[u8; 16]>::try_from(rest.get(..16).unwrap_or(&[])) {
                let _ = decode_option_header(h);
            }
        }
        1 => {
            let _ = decode_info_request(rest);
        }
        2 => {
            let _ = decode_meta_context_request(rest);
        }
        _ => {
            if let Ok(r) = decode_request(rest) {
                let mut out = Vec::new();
                encode_request(&mut out, &r);
                let again = decode_request(&out).expect("an encoded request decodes");
                assert_eq!(format!("{r:?}"), format!("{again:?}"));
            }
        }
    }
});
