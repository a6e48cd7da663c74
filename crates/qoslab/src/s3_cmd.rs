//! The S3 endpoint of `qoslab serve` (`--listen-s3`, `--s3-keys-file`).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use control_plane::api::ControlPlane;

#[derive(Args, Debug, Default)]
pub struct S3ServeArgs {
    /// Serve the node's buckets over S3 (AWS Signature V4) on this address, e.g.
    /// 127.0.0.1:9000. Buckets live in DATA_DIR/buckets; users and buckets are managed
    /// with the REST API (/api/protocols/s3/services/...), `qoslab s3`, or S3 itself
    /// (CreateBucket/DeleteBucket). See docs/S3.md.
    #[arg(long, value_name = "ADDR")]
    listen_s3: Option<SocketAddr>,
    /// S3 users to create or update at start, one per line: `USER ACCESS_KEY SECRET_KEY`
    /// (`#` starts a comment). Stored in DATA_DIR/state.db like users made over the API.
    #[arg(long, value_name = "PATH")]
    s3_keys_file: Option<PathBuf>,
}

/// Parse a keys file: `(user, access, secret)` per line, errors naming file and line.
pub fn parse_keys(path: &Path, text: &str) -> anyhow::Result<Vec<(String, String, String)>> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() != 3 {
            anyhow::bail!(
                "{}:{}: expected `USER ACCESS_KEY SECRET_KEY`, found {} field(s)",
                path.display(),
                i + 1,
                f.len()
            );
        }
        out.push((f[0].to_string(), f[1].to_string(), f[2].to_string()));
    }
    Ok(out)
}

/// Load the keys file and bind the S3 listener (if asked for): the node's builder runs it.
pub fn start(
    args: &S3ServeArgs,
    cp: &Arc<ControlPlane>,
    max_connections: usize,
) -> anyhow::Result<Option<s3_server::S3FrontEnd>> {
    if let Some(p) = &args.s3_keys_file {
        let text = std::fs::read_to_string(p)
            .with_context(|| format!("reading the S3 keys file {}", p.display()))?;
        for (i, (user, access, secret)) in parse_keys(p, &text)?.into_iter().enumerate() {
            cp.s3()
                .ensure_user(&user, &access, &secret)
                .map_err(|e| anyhow::anyhow!("{}: entry {}: {e}", p.display(), i + 1))?;
        }
    }
    let Some(addr) = args.listen_s3 else {
        return Ok(None);
    };
    let s3 = s3_server::S3FrontEnd::bind(
        addr,
        cp.clone(),
        s3_server::S3Options {
            max_connections,
            ..Default::default()
        },
    )
    .with_context(|| format!("listening for S3 on {addr}"))?;
    println!(
        "qoslab: s3: http://{} ({} bucket(s), region us-east-1, path-style)",
        s3.local_addr(),
        cp.s3().buckets().len()
    );
    Ok(Some(s3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_file() {
        let p = Path::new("k.txt");
        let k = parse_keys(
            p,
            "# users\nroot AKIA0000000000000000 secretsecretsecret # x\n\n",
        )
        .unwrap();
        assert_eq!(
            k,
            vec![(
                "root".into(),
                "AKIA0000000000000000".into(),
                "secretsecretsecret".into()
            )]
        );
        let e = parse_keys(p, "a b\n").unwrap_err().to_string();
        assert!(e.contains("k.txt:1") && e.contains("2 field"), "{e}");
    }
}
