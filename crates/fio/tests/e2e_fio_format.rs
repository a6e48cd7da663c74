#![cfg(feature = "e2e")]
//! `fmt::num2str` against fio's own formatting: fio prints the bytes a job moved with the
//! same `num2str(.., 4 significant figures, ..)` it uses for IOPS and bandwidth, so a null-engine
//! job of exactly N bytes with `kb_base=1000` shows how fio formats N (e.g. `io=15.3kB`).
//! Needs fio (the project's test script installs it); never skips.

use std::process::Command;

use fio::fmt::{num2str, Unit};

#[test]
fn matches_fio_for_the_table() {
    for n in [
        999u64, 1000, 7371, 15312, 142_000, 1_500_000, 999_999, 99_950, 10_900,
    ] {
        let out = Command::new("fio")
            .args([
                "--name=x",
                "--ioengine=null",
                &format!("--size={n}"),
                "--bs=1",
                "--kb_base=1000",
            ])
            .output()
            .expect("fio must be installed (scripts/test.sh installs it)");
        let text = String::from_utf8_lossy(&out.stdout);
        let fio = text
            .split("io=")
            .nth(1)
            .and_then(|s| s.split([',', ' ']).next())
            .unwrap_or_else(|| panic!("no io= in fio output:\n{text}"));
        assert_eq!(num2str(n, 4, false, Unit::Byte), fio, "n = {n}");
    }
}
