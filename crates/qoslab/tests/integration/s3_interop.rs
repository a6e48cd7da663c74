//! Real S3 clients against the node's S3 endpoint: awscli (`aws s3`, `aws s3api`), boto3
//! (scripted: every operation plus hostile input), s3cmd and rclone. Each creates a
//! bucket, uploads 64 MiB in parts (or the client's own multipart size), reads ranges,
//! lists with a delimiter and deletes; a wrong secret gets `SignatureDoesNotMatch`.

use std::time::Duration;

use crate::s3_util::{require_boto3, S3Node, ACCESS, SECRET};
use crate::util::{assert_same_bytes, heavy, pattern, require_tool, run};

#[test]
fn awscli_multipart_ranges_delimiter_and_wrong_signature() {
    let _g = heavy();
    let n = S3Node::start("", &[]);
    n.aws(&["s3", "mb", "s3://aws-it"]).ok();
    let big = pattern(7, 64 << 20);
    let f = n.node.scratch("big.bin");
    std::fs::write(&f, &big).unwrap();
    // aws s3 cp splits at 8 MiB: a 64 MiB file is an 8-part multipart upload.
    n.cp(f.to_str().unwrap(), "s3://aws-it/dir/big.bin");
    let head = n.s3api(&["head-object", "--bucket", "aws-it", "--key", "dir/big.bin"]);
    assert_eq!(head["ContentLength"], 64 << 20, "{head}");
    assert!(
        head["ETag"]
            .as_str()
            .unwrap()
            .trim_matches('"')
            .ends_with("-8"),
        "multipart ETag: {head}"
    );
    let part = n.node.scratch("range.bin");
    n.aws(&[
        "s3api",
        "get-object",
        "--bucket",
        "aws-it",
        "--key",
        "dir/big.bin",
        "--range",
        "bytes=1000000-1999999",
        part.to_str().unwrap(),
    ])
    .ok();
    assert_same_bytes(
        "ranged GET",
        &std::fs::read(&part).unwrap(),
        &big[1_000_000..2_000_000],
    );
    let back = n.node.scratch("back.bin");
    n.cp("s3://aws-it/dir/big.bin", back.to_str().unwrap());
    assert_same_bytes("download", &std::fs::read(&back).unwrap(), &big);
    let small = n.node.scratch("small.txt");
    std::fs::write(&small, b"top").unwrap();
    n.cp(small.to_str().unwrap(), "s3://aws-it/top.txt");
    let l = n.s3api(&["list-objects-v2", "--bucket", "aws-it", "--delimiter", "/"]);
    assert_eq!(l["CommonPrefixes"][0]["Prefix"], "dir/", "{l}");
    assert_eq!(l["Contents"].as_array().unwrap().len(), 1, "{l}");
    assert_eq!(l["Contents"][0]["Key"], "top.txt", "{l}");
    let ls = n.aws(&["s3", "ls", "s3://aws-it/dir/"]).ok();
    assert!(ls.stdout.contains("67108864 big.bin"), "{}", ls.stdout);
    // The wrong secret: SignatureDoesNotMatch, and nothing changes.
    let mut c = std::process::Command::new("aws");
    c.args([
        "--endpoint-url",
        &n.endpoint,
        "s3api",
        "delete-object",
        "--bucket",
        "aws-it",
    ])
    .args(["--key", "top.txt"]);
    n.env(&mut c);
    c.env("AWS_SECRET_ACCESS_KEY", format!("{SECRET}x"));
    let bad = run(&mut c, Duration::from_secs(60));
    assert!(
        !bad.status.success() && bad.stderr.contains("SignatureDoesNotMatch"),
        "{bad}"
    );
    n.aws(&[
        "s3api",
        "head-object",
        "--bucket",
        "aws-it",
        "--key",
        "top.txt",
    ])
    .ok();
    let rb = n.aws(&["s3", "rb", "s3://aws-it"]);
    assert!(rb.stderr.contains("BucketNotEmpty"), "{rb}");
    n.aws(&[
        "s3",
        "rm",
        "--recursive",
        "--only-show-errors",
        "s3://aws-it/",
    ])
    .ok();
    n.aws(&["s3", "rb", "s3://aws-it"]).ok();
    assert!(!n.bucket_dir().join("aws-it").exists());
}

#[test]
fn boto3_every_operation_and_hostile_input() {
    let _g = heavy();
    require_boto3();
    let mut n = S3Node::start("", &[]);
    let out = n.python("boto3_interop.py", &[], Duration::from_secs(300));
    assert!(out.status.success(), "{out}");
    assert!(out.stdout.contains("boto3 interop: ok"), "{out}");
    // Bad input ended requests, never the node.
    n.node.assert_alive();
}

#[test]
fn s3cmd_and_rclone() {
    let _g = heavy();
    require_tool("s3cmd");
    require_tool("rclone");
    let n = S3Node::start("", &[]);
    let hostport = n.endpoint.trim_start_matches("http://").to_string();
    let cfg = n.node.scratch("s3cfg");
    std::fs::write(
        &cfg,
        format!(
            "[default]\naccess_key = {ACCESS}\nsecret_key = {SECRET}\nhost_base = {hostport}\n\
             host_bucket = {hostport}\nuse_https = False\nsignature_v2 = False\n\
             bucket_location = us-east-1\nmultipart_chunk_size_mb = 5\n"
        ),
    )
    .unwrap();
    let s3cmd = |args: &[&str]| {
        let mut c = std::process::Command::new("s3cmd");
        c.arg("-c").arg(&cfg).arg("--no-progress").args(args);
        run(&mut c, Duration::from_secs(120))
    };
    let data = pattern(11, 12 << 20);
    let src = n.node.scratch("src");
    std::fs::create_dir_all(&src).unwrap();
    let f = src.join("twelve.bin");
    std::fs::write(&f, &data).unwrap();
    s3cmd(&["mb", "s3://cmd-it"]).ok();
    // 12 MiB in 5 MiB chunks: a three-part upload.
    s3cmd(&["put", f.to_str().unwrap(), "s3://cmd-it/a/twelve.bin"]).ok();
    s3cmd(&["put", f.to_str().unwrap(), "s3://cmd-it/b.bin"]).ok();
    let ls = s3cmd(&["ls", "s3://cmd-it/"]).ok();
    assert!(
        ls.stdout.contains("DIR") && ls.stdout.contains("s3://cmd-it/a/"),
        "{}",
        ls.stdout
    );
    assert!(ls.stdout.contains("s3://cmd-it/b.bin"), "{}", ls.stdout);
    let back = n.node.scratch("back.bin");
    s3cmd(&[
        "get",
        "--force",
        "s3://cmd-it/a/twelve.bin",
        back.to_str().unwrap(),
    ])
    .ok();
    assert_same_bytes("s3cmd get", &std::fs::read(&back).unwrap(), &data);
    s3cmd(&["del", "--recursive", "--force", "s3://cmd-it/"]).ok();
    s3cmd(&["rb", "s3://cmd-it"]).ok();

    let rclone = |args: &[&str]| {
        let mut c = std::process::Command::new("rclone");
        // Plain HTTP: a CA bundle from the environment only breaks rclone's transport.
        c.args(args)
            .env_remove("AWS_CA_BUNDLE")
            .env("RCLONE_CONFIG", "/dev/null")
            .env("RCLONE_CONFIG_QL_TYPE", "s3")
            .env("RCLONE_CONFIG_QL_PROVIDER", "Other")
            .env("RCLONE_CONFIG_QL_ENDPOINT", &n.endpoint)
            .env("RCLONE_CONFIG_QL_ACCESS_KEY_ID", ACCESS)
            .env("RCLONE_CONFIG_QL_SECRET_ACCESS_KEY", SECRET)
            .env("RCLONE_CONFIG_QL_FORCE_PATH_STYLE", "true")
            .env("RCLONE_CONFIG_QL_UPLOAD_CUTOFF", "5M")
            .env("RCLONE_CONFIG_QL_CHUNK_SIZE", "5M");
        run(&mut c, Duration::from_secs(120))
    };
    rclone(&["mkdir", "ql:rc-it"]).ok();
    rclone(&["copyto", f.to_str().unwrap(), "ql:rc-it/x/twelve.bin"]).ok();
    rclone(&["copyto", f.to_str().unwrap(), "ql:rc-it/y.bin"]).ok();
    let lsf = rclone(&["lsf", "ql:rc-it"]).ok();
    assert_eq!(
        lsf.stdout.lines().collect::<Vec<_>>(),
        ["x/", "y.bin"],
        "{}",
        lsf.stdout
    );
    rclone(&["check", src.to_str().unwrap(), "ql:rc-it/x/", "--one-way"]).ok();
    let back2 = n.node.scratch("back2.bin");
    rclone(&["copyto", "ql:rc-it/y.bin", back2.to_str().unwrap()]).ok();
    assert_same_bytes("rclone copyto", &std::fs::read(&back2).unwrap(), &data);
    rclone(&["purge", "ql:rc-it"]).ok();
    let lsd = rclone(&["lsd", "ql:"]).ok();
    assert!(!lsd.stdout.contains("rc-it"), "{}", lsd.stdout);
}
