//! The CLI's side of the REST API: the options every API command shares (where the node
//! is, how to trust its certificate, who we are) and a [`Client`] over the `api-client`
//! crate (ureq + rustls), plus table/JSON printing.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{anyhow, Context};
use api_client::{data_dir_ca, Auth, ClientOptions, Trust};
use clap::{Args, ValueEnum};
use serde_json::Value;

pub use api_client::ApiFailure;

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// Options shared by `policy`, `volume`, `stats` and `ontap`.
#[derive(Args, Clone, Debug)]
pub struct ApiArgs {
    /// Base URL of the node's REST API (http:// for a node run with --insecure-http).
    #[arg(long, global = true, default_value = "https://127.0.0.1:8080")]
    pub url: String,
    /// File holding the bearer token (the node's --api-token-file).
    #[arg(long, global = true, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value = "table")]
    pub output: Output,
}

/// How to trust the node's certificate and who to log in as.
#[derive(Args, Clone, Debug, Default)]
pub struct ConnArgs {
    /// The node's data directory: trust its certificate (DATA_DIR/tls/ca-cert.pem).
    /// Without this, --cacert or --insecure, ./qoslab-data is tried (serve's default).
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Trust the CA certificate(s) in this PEM file.
    #[arg(long, global = true, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Do not verify the node's certificate (like curl -k): encrypted, not authenticated.
    #[arg(long, short = 'k', global = true)]
    pub insecure: bool,
    /// API user, as USER:PASSWORD or USER (password from $QOSLAB_PASSWORD, or asked for
    /// on a terminal), like curl -u.
    #[arg(long, short = 'u', global = true, value_name = "USER[:PASSWORD]")]
    pub user: Option<String>,
}

impl ConnArgs {
    /// The trust decision: --insecure, --cacert, --data-dir, ./qoslab-data, public roots.
    pub fn trust(&self) -> Trust {
        if self.insecure {
            return Trust::Insecure;
        }
        if let Some(c) = &self.cacert {
            return Trust::CaFile(c.clone());
        }
        if let Some(d) = &self.data_dir {
            return Trust::CaFile(data_dir_ca(d));
        }
        let local = data_dir_ca(std::path::Path::new("qoslab-data"));
        if local.exists() {
            return Trust::CaFile(local);
        }
        Trust::PublicRoots
    }

    /// The `api-client` options for `url` (what `Client::connect` uses; the harness's
    /// `--node` probes can be built from the same).
    pub fn client_options(
        &self,
        url: &str,
        token_file: &Option<PathBuf>,
    ) -> anyhow::Result<ClientOptions> {
        Ok(ClientOptions {
            url: url.to_string(),
            auth: self.auth(token_file)?,
            trust: self.trust(),
            timeout: None,
        })
    }

    fn auth(&self, token_file: &Option<PathBuf>) -> anyhow::Result<Auth> {
        if let Some(u) = &self.user {
            let (user, password) = match u.split_once(':') {
                Some((a, b)) => (a.to_string(), b.to_string()),
                None => (u.clone(), password_for(u)?),
            };
            return Ok(Auth::Basic { user, password });
        }
        match token_file {
            None => Ok(Auth::None),
            Some(p) => Ok(Auth::Bearer(
                std::fs::read_to_string(p)
                    .with_context(|| format!("reading the token file {}", p.display()))?
                    .trim()
                    .to_string(),
            )),
        }
    }
}

/// The password of `user`: $QOSLAB_PASSWORD, or typed at a terminal without echo.
fn password_for(user: &str) -> anyhow::Result<String> {
    if let Ok(p) = std::env::var("QOSLAB_PASSWORD") {
        return Ok(p);
    }
    if !std::io::stdin().is_terminal() {
        return Err(anyhow!(
            "--user {user}: no password (give USER:PASSWORD, or set QOSLAB_PASSWORD)"
        ));
    }
    crate::user_cmd::read_password(&format!("Password for {user}: "))
}

/// A client for one node.
pub struct Client {
    inner: api_client::Client,
}

impl Client {
    pub fn connect(args: &ApiArgs, conn: &ConnArgs) -> anyhow::Result<Client> {
        let inner = api_client::Client::new(&conn.client_options(&args.url, &args.token_file)?)?;
        Ok(Client { inner })
    }

    /// Send a request and decode JSON; an error reply becomes an [`ApiFailure`].
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        self.inner.call(method, path, body).map_err(|e| match e {
            api_client::ClientError::Api(f) => anyhow::Error::new(ApiFailureError(f)),
            other => anyhow::Error::new(other),
        })
    }

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
}

/// An [`ApiFailure`] as an error (the message, status and code the API gave).
#[derive(Debug)]
pub struct ApiFailureError(pub ApiFailure);

impl std::fmt::Display for ApiFailureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for ApiFailureError {}

pub use api_client::enc;

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
