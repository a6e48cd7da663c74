//! A tiny blocking HTTP/1.1 client for the CLI (`Connection: close`, Content-Length bodies),
//! plus the options every API command shares.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use clap::{Args, ValueEnum};
use serde_json::Value;

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// Options shared by `policy`, `volume` and `stats`.
#[derive(Args, Clone, Debug)]
pub struct ApiArgs {
    /// Base URL of the node's REST API.
    #[arg(long, global = true, default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// File holding the bearer token (the node's --api-token-file).
    #[arg(long, global = true, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value = "table")]
    pub output: Output,
}

/// A client for one node.
pub struct Client {
    host_port: String,
    base_path: String,
    token: Option<String>,
}

/// An error reply from the API (ONTAP shape), shown as the CLI's error.
#[derive(Debug)]
pub struct ApiFailure {
    pub status: u16,
    pub message: String,
    pub code: String,
    pub target: String,
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (HTTP {}, code {}",
            self.message, self.status, self.code
        )?;
        if !self.target.is_empty() {
            write!(f, ", target {}", self.target)?;
        }
        write!(f, ")")
    }
}

impl std::error::Error for ApiFailure {}

impl Client {
    pub fn new(args: &ApiArgs) -> anyhow::Result<Client> {
        let rest = args.url.strip_prefix("http://").ok_or_else(|| {
            anyhow!(
                "--url {:?}: expected http://HOST:PORT (https is not supported)",
                args.url
            )
        })?;
        let (host_port, path) = match rest.find('/') {
            Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
            None => (rest, ""),
        };
        if host_port.is_empty() {
            bail!("--url {:?}: no host", args.url);
        }
        let host_port = if host_port.contains(':') {
            host_port.to_string()
        } else {
            format!("{host_port}:80")
        };
        let token = match &args.token_file {
            None => None,
            Some(p) => Some(
                std::fs::read_to_string(p)
                    .with_context(|| format!("reading the token file {}", p.display()))?
                    .trim()
                    .to_string(),
            ),
        };
        Ok(Client {
            host_port,
            base_path: path.to_string(),
            token,
        })
    }

    /// Send a request; returns the status and the raw body.
    pub fn raw(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(u16, String)> {
        let mut s = TcpStream::connect(&self.host_port).with_context(|| {
            format!(
                "cannot reach the qoslab API at {} (is `qoslab serve` running? see --url)",
                self.host_port
            )
        })?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let mut req = format!(
            "{method} {}{path} HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\nConnection: close\r\n",
            self.base_path, self.host_port
        );
        if let Some(t) = &self.token {
            req.push_str(&format!("Authorization: Bearer {t}\r\n"));
        }
        if !body.is_empty() || method != "GET" {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        req.push_str("\r\n");
        req.push_str(&body);
        s.write_all(req.as_bytes())?;
        let mut resp = Vec::new();
        s.read_to_end(&mut resp)?;
        parse_response(&resp)
    }

    /// Send a request and decode JSON; an error reply becomes an [`ApiFailure`].
    /// The uuid of the record of `collection` (an API path) whose name — or failing that,
    /// uuid — is `key`; `what` names the kind in the error ("QoS policy", "volume").
    pub fn resolve(
        &self,
        collection: &str,
        key: &str,
        what: &str,
        list_cmd: &str,
    ) -> anyhow::Result<String> {
        for field in ["name", "uuid"] {
            let r = self.call("GET", &format!("{collection}?{field}={}", enc(key)), None)?;
            if let Some(u) = r["records"][0]["uuid"].as_str() {
                return Ok(u.to_string());
            }
        }
        Err(anyhow!("no {what} named {key:?} ({list_cmd} shows them)"))
    }

    /// DELETE `collection/uuid` and report it the way `--output` asks.
    pub fn delete(
        &self,
        collection: &str,
        uuid: &str,
        what: &str,
        key: &str,
        out: Output,
    ) -> anyhow::Result<()> {
        self.call("DELETE", &format!("{collection}/{uuid}"), None)?;
        if out == Output::Json {
            print_json(&serde_json::json!({}));
        } else {
            println!("deleted {what} {key}");
        }
        Ok(())
    }

    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        let (status, text) = self.raw(method, path, body)?;
        let v: Value = if text.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text)
                .with_context(|| format!("HTTP {status}: the reply is not JSON: {text:.200}"))?
        };
        if (200..300).contains(&status) {
            return Ok(v);
        }
        let e = &v["error"];
        Err(ApiFailure {
            status,
            message: e["message"].as_str().unwrap_or(&text).to_string(),
            code: e["code"].as_str().unwrap_or("").to_string(),
            target: e["target"].as_str().unwrap_or("").to_string(),
        }
        .into())
    }
}

fn parse_response(resp: &[u8]) -> anyhow::Result<(u16, String)> {
    let end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| anyhow!("malformed HTTP reply ({} bytes)", resp.len()))?;
    let head = String::from_utf8_lossy(&resp[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or("");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("malformed HTTP status line {status_line:?}"))?;
    let mut body = &resp[end + 4..];
    for l in lines {
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                if let Ok(n) = v.trim().parse::<usize>() {
                    body = &body[..n.min(body.len())];
                }
            }
        }
    }
    Ok((status, String::from_utf8_lossy(body).into_owned()))
}

/// Percent-encode a query value.
pub fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'*' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Print rows as an aligned table (numbers right-aligned).
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let mut w: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let numeric: Vec<bool> = (0..headers.len())
        .map(|i| {
            !rows.is_empty()
                && rows
                    .iter()
                    .all(|r| r[i].chars().next().is_some_and(|c| c.is_ascii_digit()) || r[i] == "-")
        })
        .collect();
    let line = |cells: Vec<String>| {
        let s: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if numeric[i] {
                    format!("{c:>w$}", w = w[i])
                } else {
                    format!("{c:<w$}", w = w[i])
                }
            })
            .collect();
        println!("{}", s.join("  ").trim_end());
    };
    line(headers.iter().map(|h| h.to_string()).collect());
    line(w.iter().map(|n| "-".repeat(*n)).collect());
    for r in rows {
        line(r.clone());
    }
}

/// A JSON value as table text: strings bare, null as "-", anything else as JSON.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    }
}

pub fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses() {
        let (s, b) =
            parse_response(b"HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}xx").unwrap();
        assert_eq!((s, b.as_str()), (201, "{}"));
        assert!(parse_response(b"garbage").is_err());
        assert_eq!(enc("a b/c*"), "a%20b%2Fc*");
    }
}
