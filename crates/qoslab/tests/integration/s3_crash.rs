//! Durability of S3 PUTs: `kill -9` the node during a loop of PUTs (boto3); after a
//! restart every acknowledged object reads back with its size, MD5 and ETag, and no
//! temporary file survives.

use std::time::{Duration, Instant};

use crate::s3_util::{require_boto3, S3Node};

#[test]
fn acknowledged_puts_survive_kill9() {
    let _g = crate::util::heavy();
    require_boto3();
    let mut n = S3Node::start("", &[]);
    n.aws(&["s3", "mb", "s3://durable"]).ok();
    let log = n.node.scratch("acked.log");
    for round in 0..2u32 {
        // The loop runs in the background; the node dies under it.
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/integration/s3/put_loop.py");
        let mut c = std::process::Command::new("python3");
        c.arg(path);
        n.env(&mut c);
        c.env("S3_ENDPOINT", &n.endpoint)
            .env("ACK_LOG", &log)
            .env("BUCKET", "durable")
            .env("SEED", round.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let child = c.spawn().expect("python3");
        // Let some PUTs land, then crash at an arbitrary point of one.
        let t0 = Instant::now();
        let before = count(&log);
        while count(&log) < before + 40 && t0.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(37 * (round as u64 + 1)));
        n.node.kill9();
        let out = child.wait_with_output().expect("put loop");
        assert!(
            out.status.success(),
            "the PUT loop failed before the crash: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(count(&log) >= before + 40, "too few PUTs before the crash");
        n.node.start_again();
        n.refresh_endpoint();
        let v = n.python(
            "verify_acked.py",
            &[
                ("ACK_LOG", log.display().to_string()),
                ("BUCKET", "durable".into()),
            ],
            Duration::from_secs(120),
        );
        assert!(v.status.success(), "round {round}: {v}");
        assert_eq!(v.stdout.trim().parse::<usize>().unwrap(), count(&log));
        let tmp = n.bucket_dir().join("durable").join("tmp");
        assert_eq!(
            std::fs::read_dir(&tmp).unwrap().count(),
            0,
            "temporary files left"
        );
    }
}

fn count(p: &std::path::Path) -> usize {
    std::fs::read_to_string(p)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}
