//! Shared by the S3 tests: a node with an S3 endpoint and a user, and the real clients
//! (awscli, boto3 scripts, s3cmd, rclone, curl's SigV4) pointed at it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::util::{require_tool, run, Node, Out, TempDir};

pub const ACCESS: &str = "AKIAQOSLABTEST000001";
pub const SECRET: &str = "qoslab/test+secret0000000000000000000000";

/// A node serving S3 on a free loopback port, with user `root` (ACCESS, SECRET).
pub struct S3Node {
    pub node: Node,
    pub endpoint: String,
    _keys: TempDir,
}

impl S3Node {
    pub fn start(config_toml: &str, extra: &[&str]) -> S3Node {
        S3Node::start_on(config_toml, "127.0.0.1:0", extra)
    }

    /// The start of a `qoslab bench --profile s3` command line against this node, the
    /// user's keys read from the file `keys` in the command's directory.
    pub fn bench_args(&self) -> Vec<&str> {
        vec![
            "bench",
            "--profile",
            "s3",
            "--s3-endpoint",
            &self.endpoint,
            "--s3-keys-file",
            "keys",
        ]
    }

    /// Like [`S3Node::start`], serving S3 on `addr` (a namespace test bed's coordinator
    /// address, for load generators in the bed).
    pub fn start_on(config_toml: &str, addr: &str, extra: &[&str]) -> S3Node {
        S3Node::start_in(TempDir::new("node"), config_toml, addr, extra)
    }

    /// Like [`S3Node::start`] with the node's data directory on tmpfs (`/dev/shm`, when the
    /// machine has one): rate tests then measure the QoS, not the fsync stalls of a disk
    /// shared with the other tests (durability is tested on disk, by `s3_crash`).
    pub fn start_on_tmpfs(config_toml: &str, extra: &[&str]) -> S3Node {
        let shm = Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            TempDir::new_in(shm, "node")
        } else {
            eprintln!("no /dev/shm: the node's data directory is on the temp dir's disk");
            TempDir::new("node")
        };
        S3Node::start_in(dir, config_toml, "127.0.0.1:0", extra)
    }

    fn start_in(dir: TempDir, config_toml: &str, addr: &str, extra: &[&str]) -> S3Node {
        let keys = TempDir::new("s3keys");
        let kf = keys.join("keys");
        std::fs::write(&kf, format!("root {ACCESS} {SECRET}\n")).unwrap();
        let mut args = vec!["--listen-s3", addr, "--s3-keys-file", kf.to_str().unwrap()];
        args.extend_from_slice(extra);
        let node = Node::start_in(dir, config_toml, &args);
        let endpoint = node.listener("s3").to_string();
        S3Node {
            node,
            endpoint,
            _keys: keys,
        }
    }

    /// After a restart the port changes: read it again.
    pub fn refresh_endpoint(&mut self) {
        self.endpoint = self.node.listener("s3").to_string();
    }

    pub fn bucket_dir(&self) -> PathBuf {
        self.node.data_dir().join("buckets")
    }

    /// `aws --endpoint-url ... ARGS` with the test user's keys.
    pub fn aws(&self, args: &[&str]) -> Out {
        require_tool("aws");
        let mut c = Command::new("aws");
        c.arg("--endpoint-url").arg(&self.endpoint).args(args);
        self.env(&mut c);
        run(&mut c, Duration::from_secs(180))
    }

    /// `aws s3 cp --only-show-errors FROM TO` (an `s3://` URL on either side), which must
    /// succeed.
    pub fn cp(&self, from: &str, to: &str) {
        self.aws(&["s3", "cp", "--only-show-errors", from, to]).ok();
    }

    /// `aws s3api ARGS`, which must succeed: the JSON it answered.
    pub fn s3api(&self, args: &[&str]) -> serde_json::Value {
        let out = self.aws(&[&["s3api"][..], args].concat()).ok();
        serde_json::from_str(&out.stdout)
            .unwrap_or_else(|e| panic!("s3api {args:?} answered no JSON ({e}): {out}"))
    }

    /// `python3 SCRIPT` (from tests/integration/s3) with the endpoint and keys in its
    /// environment, plus `vars`.
    pub fn python(&self, script: &str, vars: &[(&str, String)], timeout: Duration) -> Out {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/integration/s3")
            .join(script);
        let mut c = Command::new("python3");
        c.arg(path);
        self.env(&mut c);
        c.env("S3_ENDPOINT", &self.endpoint)
            .env("BUCKET_DIR", self.bucket_dir());
        for (k, v) in vars {
            c.env(k, v);
        }
        run(&mut c, timeout)
    }

    pub fn env(&self, c: &mut Command) {
        c.env("AWS_ACCESS_KEY_ID", ACCESS)
            .env("AWS_SECRET_ACCESS_KEY", SECRET)
            .env("AWS_DEFAULT_REGION", "us-east-1")
            // No user config may change what the clients do (an empty file is not a
            // valid config to botocore: name one that does not exist).
            .env("AWS_CONFIG_FILE", "/nonexistent/qoslab-test/aws-config")
            .env(
                "AWS_SHARED_CREDENTIALS_FILE",
                "/nonexistent/qoslab-test/aws-credentials",
            )
            .env("AWS_EC2_METADATA_DISABLED", "true");
    }
}

/// Fail (never skip) unless boto3 imports.
pub fn require_boto3() {
    let ok = Command::new("python3")
        .args(["-c", "import boto3"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "python3 cannot import boto3: run scripts/install-deps.sh (pip install boto3 awscli)"
    );
}
