//! The CLI's side of the REST API: the options every API command shares (where the node
//! is, how to trust its certificate, who we are) and a [`Client`] over the `api-client`
//! crate (ureq + rustls), plus table/JSON printing.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::anyhow;
use api_client::ClientOptions;
use clap::{Args, ValueEnum};
use serde_json::Value;

pub use api_client::ApiFailure;

/// How results are printed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// Options shared by `policy`, `volume`, `stats`, `ontap` and `s3`.
#[derive(Args, Clone, Debug)]
pub struct ApiArgs {
    /// Base URL of the node's REST API [default: $QOSLAB_URL, else the saved context
    /// (`qoslab login`), else https://127.0.0.1:8080].
    #[arg(long, global = true)]
    pub url: Option<String>,
    /// File holding the bearer token (the node's --api-token-file) [default:
    /// $QOSLAB_TOKEN_FILE].
    #[arg(long, global = true, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Output format.
    #[arg(long, global = true, value_enum, default_value = "table")]
    pub output: Output,
}

/// How to trust the node's certificate and who to log in as (each falls back on the
/// environment and the saved context: crate::context).
#[derive(Args, Clone, Debug, Default)]
pub struct ConnArgs {
    /// The node's data directory: trust its certificate (DATA_DIR/tls/ca-cert.pem)
    /// [default: $QOSLAB_DATA_DIR, else ./qoslab-data when it holds one].
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Trust the CA certificate(s) in this PEM file.
    #[arg(long, global = true, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
    /// Do not verify the node's certificate (like curl -k): encrypted, not authenticated.
    #[arg(long, short = 'k', global = true)]
    pub insecure: bool,
    /// API user, USER:PASSWORD or USER (like curl -u) [default: $QOSLAB_USER, else the
    /// saved context]; a missing password comes from $QOSLAB_PASSWORD or is asked for.
    #[arg(long, short = 'u', global = true, value_name = "USER[:PASSWORD]")]
    pub user: Option<String>,
}

impl ConnArgs {
    /// The client context for `url` and `token_file` (flags), resolved against the
    /// environment and the saved context (crate::context).
    pub fn resolve(
        &self,
        url: Option<&str>,
        token_file: Option<&std::path::Path>,
    ) -> anyhow::Result<crate::context::Resolved> {
        let saved = crate::context::load()?;
        Ok(crate::context::resolve(
            &crate::context::Flags {
                url,
                data_dir: self.data_dir.as_deref(),
                cacert: self.cacert.as_deref(),
                insecure: self.insecure,
                user: self.user.as_deref(),
                token_file,
            },
            saved.as_ref(),
        ))
    }

    /// The `api-client` options for `url` (what `Client::connect` uses; the harness's
    /// `--node` probes are built from the same).
    pub fn client_options(
        &self,
        url: Option<&str>,
        token_file: &Option<PathBuf>,
    ) -> anyhow::Result<ClientOptions> {
        self.resolve(url, token_file.as_deref())?
            .options(&password_for)
    }
}

/// The password of `user`, typed at a terminal without echo (the environment and the saved
/// context had none).
fn password_for(user: &str) -> anyhow::Result<String> {
    if !std::io::stdin().is_terminal() {
        return Err(anyhow!(
            "--user {user}: no password (give USER:PASSWORD, set QOSLAB_PASSWORD, or `qoslab login`)"
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
        let inner =
            api_client::Client::new(&conn.client_options(args.url.as_deref(), &args.token_file)?)?;
        Ok(Client { inner })
    }

    /// Send a request and decode JSON; an error reply becomes an [`ApiFailure`].
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> anyhow::Result<Value> {
        self.inner.call(method, path, body).map_err(|e| match e {
            api_client::ClientError::Api(f) => anyhow::Error::new(ApiFailureError(f)),
            other => anyhow::Error::new(other),
        })
    }

    /// The record of `collection` (an API path) whose first of `fields`, tried in order,
    /// is `key`; `extra` is appended to the query (`&fields=*`); `what` names the kind in
    /// the error ("QoS policy", "volume").
    pub fn find_record(
        &self,
        collection: &str,
        key: &str,
        fields: &[&str],
        extra: &str,
        what: &str,
        list_cmd: &str,
    ) -> anyhow::Result<Value> {
        for field in fields {
            let q = format!("{collection}?{field}={}{extra}", enc(key));
            if let Some(rec) = self.call("GET", &q, None)?["records"].get(0) {
                return Ok(rec.clone());
            }
        }
        Err(anyhow!("no {what} named {key:?} ({list_cmd} shows them)"))
    }

    /// The uuid of the record of `collection` whose name — or failing that, uuid — is `key`.
    pub fn resolve(
        &self,
        collection: &str,
        key: &str,
        what: &str,
        list_cmd: &str,
    ) -> anyhow::Result<String> {
        let rec = self.find_record(collection, key, &["name", "uuid"], "", what, list_cmd)?;
        rec["uuid"]
            .as_str()
            .map(str::to_string)
            .ok_or_else(|| anyhow!("{what} {key:?}: the node's record has no uuid"))
    }

    /// GET `collection/uuid`: one record.
    pub fn get(&self, collection: &str, uuid: &str) -> anyhow::Result<Value> {
        self.call("GET", &format!("{collection}/{uuid}"), None)
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
        print_done(
            out,
            &serde_json::json!({}),
            &format!("deleted {what} {key}"),
        );
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

/// `GET path` and print its records: the reply as JSON, or a table of `headers` with a
/// `row` per record.
pub fn print_records(
    c: &Client,
    path: &str,
    out: Output,
    headers: &[&str],
    row: impl Fn(&Value) -> Vec<String>,
) -> anyhow::Result<()> {
    let r = c.call("GET", path, None)?;
    if out == Output::Json {
        print_json(&r);
        return Ok(());
    }
    let rows: Vec<Vec<String>> = r["records"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(row)
        .collect();
    print_table(headers, &rows);
    Ok(())
}

/// What a command did: `reply` (the node's answer) for `--output json`, else `said`.
pub fn print_done(out: Output, reply: &Value, said: &str) {
    if out == Output::Json {
        print_json(reply);
    } else {
        println!("{said}");
    }
}

pub fn print_json(v: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
    );
}
