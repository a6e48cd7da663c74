//! `qoslab ontap`: ONTAP clustershell commands against a node's REST API, so that the
//! seeds' `::>` lines run as written: `qos policy-group ...`, `qos adaptive-policy-group
//! ...`, `qos statistics volume performance show`, `volume create|modify|show|delete`
//! (`vol` works: command words may be abbreviated), `vserver show`, and SAN: `lun
//! create|show|map|unmap|mapping show`, `igroup create|add|show`, `vserver iscsi show`. With no words, an
//! interactive `qoslab::>` prompt (or a script on standard input). docs/CLUSTERSHELL.md.

mod export_policy;
mod parse;
mod qos;
mod san;
mod volume;

use std::io::{BufRead, IsTerminal, Write};

use clap::Args;
use serde_json::Value;

use crate::http_client::{enc, ApiArgs, Client, ConnArgs};
use parse::{err, pick, ShellError};

#[derive(Args)]
#[command(after_help = "\
EXAMPLES (seed 000 and seed 001):
  qoslab ontap qos adaptive-policy-group create -policy-group aQoS -vserver nfs_svm \\
      -expected-iops 5IOPS/GB -peak-iops 50IOPS/GB -peak-iops-allocation allocated-space
  qoslab ontap qos adaptive-policy-group show
  qoslab ontap vol modify -vserver epic -volume epic_rhel1_* -qos-adaptive-policy-group AqosEpicProd
  qoslab ontap qos policy-group create -policy-group pg500 -vserver vs1 -max-throughput 500iops
  qoslab ontap qos statistics volume performance show -iterations 1
  qoslab ontap lun create -vserver qoslab -path /vol/db/lun1 -size 10g -ostype linux
  qoslab ontap igroup create -igroup hosts -protocol iscsi -ostype linux -initiator iqn.1993-08.org.debian:01:h1
  qoslab ontap lun map -path /vol/db/lun1 -igroup hosts -lun-id 0
  qoslab ontap                          # interactive: qoslab::> prompt (exit to leave)

Options of qoslab itself (--url, --data-dir, -u, -k) go before the command words.
Values take ONTAP's query characters where ONTAP does (-volume epic_*, -policy-group a*|b).
See docs/CLUSTERSHELL.md for the commands, parameters and what differs from ONTAP.")]
pub struct OntapArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(flatten)]
    conn: ConnArgs,
    /// A clustershell command (none: read commands from a prompt or standard input).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "WORDS"
    )]
    words: Vec<String>,
}

/// The shell: a client and where output goes.
pub struct Shell {
    client: Client,
}

pub(crate) type R<T> = Result<T, ShellError>;

impl Shell {
    /// Call the API; an API error becomes ONTAP's `command failed` message.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> R<Value> {
        self.client.call(method, path, body).map_err(|e| match e
            .downcast_ref::<crate::http_client::ApiFailureError>()
        {
            Some(f) => ShellError(format!("command failed: {}", f.0.message)),
            None => ShellError(format!("{e:#}")),
        })
    }

    fn records(&self, path: &str) -> R<Vec<Value>> {
        Ok(self.call("GET", path, None)?["records"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }

    /// The records of `collection`, all fields, ordered by `order_by`, whose fields have
    /// the values `filters` give (a filter without a value selects on nothing).
    fn select(
        &self,
        collection: &str,
        order_by: &str,
        filters: &[(&str, Option<&str>)],
    ) -> R<Vec<Value>> {
        let mut q = format!("{collection}?fields=*&order_by={order_by}");
        for (field, value) in filters {
            if let Some(v) = value {
                q.push_str(&format!("&{field}={}", enc(v)));
            }
        }
        self.records(&q)
    }

    /// [`Shell::select`] for a `show`: ONTAP's error when nothing matches.
    fn show_records(
        &self,
        collection: &str,
        order_by: &str,
        filters: &[(&str, Option<&str>)],
    ) -> R<Vec<Value>> {
        let recs = self.select(collection, order_by, filters)?;
        if recs.is_empty() {
            return Err(no_match());
        }
        Ok(recs)
    }

    /// The uuid of the `what` ("LUN") named `name` in `collection` (in `vserver`, when
    /// given).
    fn uuid_named(
        &self,
        collection: &str,
        what: &str,
        name: &str,
        vserver: Option<&str>,
    ) -> R<String> {
        let recs = self.select(
            collection,
            "name",
            &[("name", Some(name)), ("svm.name", vserver)],
        )?;
        match recs.first().and_then(|r| r["uuid"].as_str()) {
            Some(u) => Ok(u.to_string()),
            None => err(format!("command failed: {what} \"{name}\" does not exist")),
        }
    }

    /// Run one command line (already split into words).
    pub fn run(&self, words: &[String], out: &mut dyn Write) -> R<()> {
        let Some(first) = words.first() else {
            return Ok(());
        };
        let top = pick(first, &["qos", "volume", "vserver", "lun", "igroup"], "")?;
        let rest = &words[1..];
        match top {
            "qos" => qos::run(self, rest, out),
            "volume" => volume::run(self, rest, out),
            "lun" => san::lun(self, rest, out),
            "igroup" => san::igroup(self, rest, out),
            _ => volume::vserver(self, rest, out),
        }
    }
}

/// The next command word under `context` (e.g. "qos policy-group").
fn sub<'a>(words: &[String], choices: &[&'a str], context: &str) -> R<&'a str> {
    match words.first() {
        None => err(format!(
            "incomplete command \"{context}\"; it takes one of: {}",
            choices.join(", ")
        )),
        Some(w) => pick(w, choices, &format!(" under \"{context}\"")),
    }
}

/// ONTAP's error for a query that matches nothing.
fn no_match() -> ShellError {
    ShellError("There are no entries matching your query.".into())
}

/// "N entries were <verb>." after a command that touched several objects, and the empty
/// line ONTAP prints after it (the next prompt or output starts apart).
fn entries(out: &mut dyn Write, n: usize, verb: &str) {
    if n > 1 {
        let _ = writeln!(out, "{n} entries were {verb}.\n");
    }
}

/// An aligned table with ONTAP's dashed rule under the header.
fn table(out: &mut dyn Write, headers: &[&str], rows: &[Vec<String>]) {
    let mut w: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let line = |cells: Vec<String>| {
        let s: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<w$}", w = w[i]))
            .collect();
        s.join(" ").trim_end().to_string()
    };
    let _ = writeln!(
        out,
        "{}",
        line(headers.iter().map(|h| h.to_string()).collect())
    );
    let _ = writeln!(out, "{}", line(w.iter().map(|n| "-".repeat(*n)).collect()));
    for r in rows {
        let _ = writeln!(out, "{}", line(r.clone()));
    }
    entries(out, rows.len(), "displayed");
}

/// A size as ONTAP shows it: `100GB`, `1.50KB` (powers of 1024).
fn size_text(b: u64) -> String {
    const U: [&str; 5] = ["B", "KB", "MB", "GB", "TB"];
    let mut x = b as f64;
    let mut i = 0;
    while x >= 1024.0 && i < U.len() - 1 {
        x /= 1024.0;
        i += 1;
    }
    if x.fract() == 0.0 {
        format!("{x}{}", U[i])
    } else {
        format!("{x:.2}{}", U[i])
    }
}

/// `-fields a,b` (ONTAP's): the key columns, then the fields asked for, headed by their
/// field names. `rows` hold each record's fields by name; `known` are the command's fields.
fn fields_table(
    out: &mut dyn Write,
    keys: &[&'static str],
    known: &[&'static str],
    wanted: &str,
    rows: &[Vec<(&'static str, String)>],
) -> R<()> {
    let mut cols: Vec<&str> = keys.to_vec();
    for f in wanted.split(',').map(str::trim).filter(|f| !f.is_empty()) {
        let Some(k) = known.iter().find(|k| **k == f) else {
            return err(format!(
                "\"{f}\" is not a valid field{} (fields: {})",
                parse::did_you_mean(f, known.iter().copied(), ""),
                known.join(", ")
            ));
        };
        if !cols.contains(k) {
            cols.push(k);
        }
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            cols.iter()
                .map(|c| {
                    r.iter()
                        .find(|(n, _)| n == c)
                        .map(|(_, v)| v.clone())
                        .unwrap_or_else(|| "-".into())
                })
                .collect()
        })
        .collect();
    table(out, &cols, &cells);
    Ok(())
}

pub fn run(args: OntapArgs) -> anyhow::Result<()> {
    let shell = Shell {
        client: Client::connect(&args.api, &args.conn)?,
    };
    let mut stdout = std::io::stdout();
    if !args.words.is_empty() {
        if let Err(e) = shell.run(&args.words, &mut stdout) {
            let _ = stdout.flush();
            eprintln!("{e}");
            std::process::exit(1);
        }
        return Ok(());
    }
    let interactive = std::io::stdin().is_terminal();
    let mut failed = false;
    let mut line = String::new();
    loop {
        if interactive {
            print!("qoslab::> ");
            let _ = stdout.flush();
        }
        line.clear();
        if std::io::stdin().lock().read_line(&mut line)? == 0 {
            if interactive {
                println!();
            }
            break;
        }
        let text = line.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        if matches!(text, "exit" | "quit" | "logout") {
            break;
        }
        let words = match parse::words(text) {
            Ok(w) => w,
            Err(e) => {
                eprintln!("{e}");
                failed = true;
                continue;
            }
        };
        // A pasted prompt (`::> qos ...`, `cluster1::> ...`) is not part of the command.
        let words: Vec<String> = match words.iter().position(|w| w.ends_with("::>")) {
            Some(i) => words[i + 1..].to_vec(),
            None => words,
        };
        if let Err(e) = shell.run(&words, &mut stdout) {
            let _ = stdout.flush();
            eprintln!("{e}");
            failed = true;
        }
    }
    if failed && !interactive {
        std::process::exit(1);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes() {
        assert_eq!(super::size_text(100 << 30), "100GB");
        assert_eq!(super::size_text(1536), "1.50KB");
    }
}
