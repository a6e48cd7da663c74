//! What the export snapshot tests share: the bytes an export must match in
//! `tests/snapshots/` and the lab host their fixed runs were recorded on.

use harness::host::Env;

/// Asserts that `got` is the snapshot `file`'s bytes (with `UPDATE_SNAPSHOTS` set, writes
/// them first) and returns them as text.
pub fn check_snapshot(got: Vec<u8>, file: &str) -> String {
    let path = format!("{}/tests/snapshots/{file}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, &got).unwrap();
    }
    let want = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("{path}: {e} (UPDATE_SNAPSHOTS=1 creates it)"));
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(
        got == want,
        "{file} differs from the snapshot; got:\n{text}"
    );
    text
}

/// The host the snapshot runs were recorded on.
pub fn lab_env() -> Env {
    Env {
        host: "lab1".into(),
        kernel: "6.1.0".into(),
        cpu: "Example CPU (2 cores)".into(),
        fio_version: "fio-3.33".into(),
        qoslab_version: "0.1.0".into(),
    }
}
