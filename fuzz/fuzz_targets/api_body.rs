//! REST request bodies: strict JSON (duplicate keys refused) and the validation of every
//! body the API takes (volume and policy POST/PATCH). Any bytes give a value or an ONTAP
//! error with a 4xx status, never a panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use control_plane::api::model;

fuzz_target!(|data: &[u8]| {
    let Some((&sel, body)) = data.split_first() else {
        return;
    };
    let m = match model::parse_body(body) {
        Ok(m) => m,
        Err(e) => {
            assert!((400..500).contains(&e.status), "{e:?}");
            return;
        }
    };
    let status = match sel % 4 {
        0 => model::new_volume(&m).err(),
        1 => model::patch_volume(&m).err(),
        2 => model::new_policy(&m).err(),
        _ => {
            let cur = model::stored_policy(r#"{"fixed":{"max_throughput_iops":500}}"#)
                .expect("a stored policy");
            model::patch_policy(&m, &cur).err()
        }
    }
    .map(|e| e.status);
    if let Some(s) = status {
        assert!((400..500).contains(&s), "status {s}");
    }
});
