//! `qoslab export-policy list|show|create|modify|delete` and `qoslab export-policy rule
//! add|delete`: NFS export policies over the REST API (`/api/protocols/nfs/export-policies`,
//! ONTAP's shape: a numeric id, a name, an ordered list of rules of client matches with
//! `ro_rule`/`rw_rule`). Flags are checked here with the node's own rule parser, so a typo
//! names the flag and the value before anything is sent.

use anyhow::{anyhow, bail};
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};
use storage_node::nas::export_rule::RuleText;

use crate::http_client::{
    print_json, print_records, print_table, text, ApiArgs, Client, ConnArgs, Output,
};

const POLICIES: &str = "/api/protocols/nfs/export-policies";

#[derive(Args)]
#[command(after_help = "\
A policy is an ordered list of rules; the first rule whose clients match a client's address
decides its access, and a client no rule matches is refused (at connect; NFS3ERR_ACCES on
every call). A rule also says who the client's users are: root is the anonymous user
(--anon, 65534) unless --superuser sys (or any) keeps it, AUTH_NONE is always anonymous,
and every call is checked against the files' owners and modes. `default` (loopback only,
root kept) always exists and is every NAS volume's policy until `qoslab volume modify NAME
--export-policy POLICY`.

EXAMPLES:
  qoslab export-policy create k8s --clients 10.244.0.0/16,127.0.0.1 --superuser sys
  qoslab export-policy create lab --clients 10.0.0.0/24 --ro-rule sys --rw-rule never
  qoslab export-policy create guests --clients any --ro-rule none --rw-rule never --anon 1001
  qoslab export-policy rule add lab --clients 10.0.1.7 --index 1       # before the others
  qoslab export-policy rule delete lab --index 2
  qoslab volume modify nas500 --export-policy k8s
  qoslab export-policy list
  qoslab export-policy show k8s --output json
  qoslab export-policy modify k8s --new-name kubernetes
  qoslab export-policy delete lab")]
pub struct ExportPolicyArgs {
    #[command(flatten)]
    api: ApiArgs,
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    cmd: PolicyCmd,
}

#[derive(Subcommand)]
enum PolicyCmd {
    /// Create a policy, with one rule when --clients is given (more with `rule add`;
    /// a policy without rules admits nobody).
    Create {
        /// Export policy name.
        name: String,
        #[command(flatten)]
        rule: Box<RuleFlags>,
        /// SVM name to record with the policy.
        #[arg(long)]
        svm: Option<String>,
    },
    /// List policies: id, name, rules, the NAS volumes using each.
    List,
    /// Show one policy (by name or id) and its rules in order.
    Show { policy: String },
    /// Rename a policy (its volumes follow; `default` cannot be renamed).
    Modify {
        /// Policy name or id.
        policy: String,
        /// The new name.
        #[arg(long)]
        new_name: String,
    },
    /// Delete a policy (refused while a NAS volume uses it, and for `default`).
    Delete { policy: String },
    /// A policy's rules: add or delete one (in force for mounted clients at their next call).
    Rule(RuleArgs),
}

#[derive(Args)]
struct RuleArgs {
    #[command(subcommand)]
    cmd: RuleCmd,
}

#[derive(Subcommand)]
enum RuleCmd {
    /// Add a rule (at the end, or at --index).
    Add {
        /// Policy name or id.
        policy: String,
        #[command(flatten)]
        rule: Box<RuleFlags>,
        /// Where the rule goes, 1 = first (default: after the last).
        #[arg(long, value_name = "N")]
        index: Option<usize>,
    },
    /// Delete the rule at --index (1 = first, as `show` numbers them).
    Delete {
        /// Policy name or id.
        policy: String,
        #[arg(long, value_name = "N")]
        index: usize,
    },
}

#[derive(Args, Default)]
struct RuleFlags {
    /// The clients a rule matches, comma-separated: ADDR, ADDR/PREFIX (IPv4 or IPv6), or
    /// `any` (ONTAP's clientmatch: 0.0.0.0/0 and ::/0). Host names and netgroups are not
    /// supported.
    #[arg(long, value_name = "MATCH,...")]
    clients: Option<String>,
    /// Security flavours granted read access, comma-separated (ONTAP's -rorule): any, sys
    /// (AUTH_SYS), none (any other flavour, AUTH_NONE included, as the anonymous user) or
    /// never. `never` in both rules: the rule matches and grants nothing.
    #[arg(long, value_name = "FLAVOUR,...", default_value = "any")]
    ro_rule: String,
    /// Security flavours granted write access (ONTAP's -rwrule): any, sys, none or never;
    /// `never` makes the rule read-only.
    #[arg(long, value_name = "FLAVOUR,...", default_value = "any")]
    rw_rule: String,
    /// Flavours for which uid 0 stays root (ONTAP's -superuser): any or sys keep it; none
    /// (ONTAP's default) maps root to the anonymous user.
    #[arg(long, value_name = "FLAVOUR,...", default_value = "none")]
    superuser: String,
    /// The user id anonymous and squashed calls act as (ONTAP's -anon; 65535 refuses them).
    #[arg(long, value_name = "UID", default_value = "65534")]
    anon: String,
    /// Honour setuid/setgid bits clients set (ONTAP's -allow-suid).
    #[arg(long, value_name = "true|false", default_value = "true", action = clap::ArgAction::Set)]
    allow_suid: bool,
    /// Who may change a file's owner (ONTAP's -chown-mode): restricted (root only) or
    /// unrestricted (also the file's owner).
    #[arg(long, value_name = "MODE", default_value = "restricted")]
    chown_mode: String,
    /// ONTAP's -ntfs-unix-security-ops: fail or ignore (NTFS volumes only; stored).
    #[arg(long, value_name = "fail|ignore", default_value = "fail")]
    ntfs_unix_security: String,
    /// Protocols the rule applies to (ONTAP's -protocol): any, nfs, nfs3 (a rule for nfs4
    /// or cifs only never matches qoslab's NFSv3 clients).
    #[arg(long, value_name = "PROTOCOL,...", default_value = "any")]
    protocols: String,
    /// ONTAP's -allow-dev (stored; qoslab never creates devices: MKNOD is not served).
    #[arg(long, value_name = "true|false", default_value = "true", action = clap::ArgAction::Set)]
    allow_device_creation: bool,
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

impl RuleFlags {
    /// The rule the flags describe, checked by the node's own parser; an error names the
    /// flag and the value. `None` without --clients.
    fn rule(&self) -> anyhow::Result<Option<Value>> {
        let Some(clients) = &self.clients else {
            return Ok(None);
        };
        let r = RuleText {
            clients: list(clients),
            ro_rule: list(&self.ro_rule),
            rw_rule: list(&self.rw_rule),
            superuser: list(&self.superuser),
            anonymous_user: self.anon.clone(),
            allow_suid: self.allow_suid,
            chown_mode: self.chown_mode.clone(),
            ntfs_unix_security: self.ntfs_unix_security.clone(),
            protocols: list(&self.protocols),
            allow_device_creation: self.allow_device_creation,
        };
        if let Err(e) = r.parse() {
            let (field, why) = e.split_once(": ").unwrap_or(("", &e));
            let flag = match field {
                "clients" => format!("--clients {clients:?}"),
                "ro_rule" => format!("--ro-rule {:?}", self.ro_rule),
                "rw_rule" => format!("--rw-rule {:?}", self.rw_rule),
                "superuser" => format!("--superuser {:?}", self.superuser),
                "anonymous_user" => format!("--anon {:?}", self.anon),
                "chown_mode" => format!("--chown-mode {:?}", self.chown_mode),
                "ntfs_unix_security" => {
                    format!("--ntfs-unix-security {:?}", self.ntfs_unix_security)
                }
                _ => format!("--protocols {:?}", self.protocols),
            };
            bail!("{flag}: {why}");
        }
        Ok(Some(control_plane::api::model::nas::rule_json(&r)))
    }
}

/// The policy named `key` (or with id `key`), all fields.
fn find(c: &Client, key: &str) -> anyhow::Result<Value> {
    // Export policies are keyed by a numeric id, not a uuid.
    let fields: &[&str] = if key.parse::<u64>().is_ok() {
        &["name", "id"]
    } else {
        &["name"]
    };
    let list = "qoslab export-policy list";
    c.find_record(POLICIES, key, fields, "&fields=*", "export policy", list)
}

/// The rules of `p` as a PATCH takes them: every field kept but `index` (the node
/// numbers them).
fn rules_of(p: &Value) -> Vec<Value> {
    p["rules"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(o) = r.as_object_mut() {
                o.remove("index");
            }
            r
        })
        .collect()
}

fn strs(v: &Value) -> String {
    v.as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|x| x.as_str().unwrap_or("?"))
        .collect::<Vec<_>>()
        .join(",")
}

fn clients_text(r: &Value) -> String {
    r["clients"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|c| c["match"].as_str().unwrap_or("?"))
        .collect::<Vec<_>>()
        .join(",")
}

/// What a rule grants, in words (as the node decides it: read-write needs both rules;
/// `none` admits as the anonymous user; root is squashed unless `superuser` keeps it).
fn access_text(r: &Value) -> String {
    let words = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let grants = |w: &[String]| !w.is_empty() && !w.iter().any(|x| x == "never");
    let (ro, rw) = (words(&r["ro_rule"]), words(&r["rw_rule"]));
    let level = match (grants(&ro), grants(&rw)) {
        (true, true) => "read-write",
        (true, false) => "read-only",
        (false, _) => return "no access".into(),
    };
    let su = words(&r["superuser"]);
    let root = if su.iter().any(|x| x == "any" || x == "sys") {
        "root kept"
    } else {
        "root squashed"
    };
    format!("{level}, {root}")
}

fn rules_text(p: &Value) -> String {
    let rules = p["rules"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default();
    if rules.is_empty() {
        return "(none: nobody)".into();
    }
    rules
        .iter()
        .enumerate()
        .map(|(i, r)| format!("#{} {} {}", i + 1, clients_text(r), access_text(r)))
        .collect::<Vec<_>>()
        .join("; ")
}

/// NAS volume names by export policy name.
fn users(c: &Client) -> anyhow::Result<Vec<(String, String)>> {
    let r = c.call("GET", "/api/storage/volumes?fields=nas", None)?;
    Ok(r["records"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|v| {
            let p = v["nas"]["export_policy"]["name"].as_str()?;
            Some((p.to_string(), v["name"].as_str().unwrap_or("").to_string()))
        })
        .collect())
}

fn volumes_of(users: &[(String, String)], policy: &str) -> Vec<String> {
    users
        .iter()
        .filter(|(p, _)| p == policy)
        .map(|(_, v)| v.clone())
        .collect()
}

pub fn run(args: ExportPolicyArgs) -> anyhow::Result<()> {
    // Flags first: a typo is reported without reaching the node.
    match &args.cmd {
        PolicyCmd::Create { rule, .. }
        | PolicyCmd::Rule(RuleArgs {
            cmd: RuleCmd::Add { rule, .. },
        }) => {
            rule.rule()?;
        }
        _ => {}
    }
    let c = Client::connect(&args.api, &args.conn)?;
    let out = args.api.output;
    match args.cmd {
        PolicyCmd::Create { name, rule, svm } => {
            let mut b = Map::new();
            b.insert("name".into(), json!(name));
            let rules: Vec<Value> = rule.rule()?.into_iter().collect();
            b.insert("rules".into(), Value::Array(rules));
            if let Some(s) = svm {
                b.insert("svm".into(), json!({ "name": s }));
            }
            let r = c.call("POST", POLICIES, Some(&Value::Object(b)))?;
            show(&r, &[], out);
        }
        PolicyCmd::List => {
            // The volumes column needs the volumes (not read for --output json).
            let users = match out {
                Output::Json => Vec::new(),
                _ => users(&c)?,
            };
            let path = format!("{POLICIES}?fields=*");
            print_records(&c, &path, out, &["Id", "Name", "Rules", "Volumes"], |p| {
                let name = p["name"].as_str().unwrap_or("");
                let vols = volumes_of(&users, name);
                vec![
                    p["id"].to_string(),
                    name.to_string(),
                    rules_text(p),
                    if vols.is_empty() {
                        "-".into()
                    } else {
                        vols.join(",")
                    },
                ]
            })?;
        }
        PolicyCmd::Show { policy } => {
            let p = find(&c, &policy)?;
            let vols = if out == Output::Json {
                Vec::new()
            } else {
                volumes_of(&users(&c)?, p["name"].as_str().unwrap_or(""))
            };
            show(&p, &vols, out);
        }
        PolicyCmd::Modify { policy, new_name } => {
            let p = find(&c, &policy)?;
            patch(&c, &p, json!({ "name": new_name }), out)?;
        }
        PolicyCmd::Delete { policy } => {
            let p = find(&c, &policy)?;
            c.delete(
                POLICIES,
                &p["id"].to_string(),
                "export policy",
                &text(&p["name"]),
                out,
            )?;
        }
        PolicyCmd::Rule(RuleArgs { cmd }) => match cmd {
            RuleCmd::Add {
                policy,
                rule,
                index,
            } => {
                let new = rule.rule()?.ok_or_else(|| {
                    anyhow!(
                        "--clients: give the clients the rule matches, e.g. --clients 10.0.0.0/24"
                    )
                })?;
                edit_rules(&c, &policy, out, |rules| {
                    let at = index.unwrap_or(rules.len() + 1);
                    if at == 0 || at > rules.len() + 1 {
                        bail!(
                            "--index {at}: the policy has {} rule(s); give 1 to {}",
                            rules.len(),
                            rules.len() + 1
                        );
                    }
                    rules.insert(at - 1, new);
                    Ok(())
                })?;
            }
            RuleCmd::Delete { policy, index } => {
                edit_rules(&c, &policy, out, |rules| {
                    if index == 0 || index > rules.len() {
                        bail!(
                            "--index {index}: the policy has {} rule(s){}",
                            rules.len(),
                            if rules.is_empty() {
                                String::new()
                            } else {
                                format!("; give 1 to {}", rules.len())
                            }
                        );
                    }
                    rules.remove(index - 1);
                    Ok(())
                })?;
            }
        },
    }
    Ok(())
}

/// Read `policy`'s rules, change them with `change`, write the whole list back (one PATCH).
fn edit_rules(
    c: &Client,
    policy: &str,
    out: Output,
    change: impl FnOnce(&mut Vec<Value>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let p = find(c, policy)?;
    let mut rules = rules_of(&p);
    change(&mut rules)?;
    patch(c, &p, json!({ "rules": rules }), out)
}

/// PATCH the policy `p` (its record) with `body` and show what the node answered.
fn patch(c: &Client, p: &Value, body: Value, out: Output) -> anyhow::Result<()> {
    let r = c.call("PATCH", &format!("{POLICIES}/{}", p["id"]), Some(&body))?;
    show(&r, &[], out);
    Ok(())
}

fn show(p: &Value, volumes: &[String], out: Output) {
    if out == Output::Json {
        print_json(p);
        return;
    }
    println!("Export Policy Name: {}", text(&p["name"]));
    println!("                Id: {}", text(&p["id"]));
    if let Some(s) = p["svm"]["name"].as_str() {
        println!("               SVM: {s}");
    }
    if !volumes.is_empty() {
        println!("       NAS Volumes: {}", volumes.join(", "));
    }
    let rules = p["rules"]
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default();
    if rules.is_empty() {
        println!("             Rules: none (no client is admitted)");
        return;
    }
    let rows: Vec<Vec<String>> = rules
        .iter()
        .enumerate()
        .map(|(i, r)| {
            vec![
                (i + 1).to_string(),
                clients_text(r),
                strs(&r["ro_rule"]),
                strs(&r["rw_rule"]),
                strs(&r["superuser"]),
                text(&r["anonymous_user"]),
                access_text(r),
            ]
        })
        .collect();
    println!();
    print_table(
        &[
            "Index",
            "Clients",
            "RO Rule",
            "RW Rule",
            "Superuser",
            "Anon",
            "Access",
        ],
        &rows,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags(clients: &str, ro: &str, rw: &str) -> RuleFlags {
        RuleFlags {
            clients: Some(clients.into()),
            ro_rule: ro.into(),
            rw_rule: rw.into(),
            superuser: "none".into(),
            anon: "65534".into(),
            allow_suid: true,
            chown_mode: "restricted".into(),
            ntfs_unix_security: "fail".into(),
            protocols: "any".into(),
            allow_device_creation: true,
        }
    }

    #[test]
    fn rule_flags_become_ontap_rules_and_errors_name_the_flag() {
        let r = flags("10.0.0.0/24, 127.0.0.1", "sys", "never")
            .rule()
            .unwrap()
            .unwrap();
        assert_eq!(
            r,
            json!({"clients": [{"match": "10.0.0.0/24"}, {"match": "127.0.0.1"}],
                   "ro_rule": ["sys"], "rw_rule": ["never"], "superuser": ["none"],
                   "anonymous_user": "65534", "allow_suid": true, "chown_mode": "restricted",
                   "ntfs_unix_security": "fail", "protocols": ["any"],
                   "allow_device_creation": true})
        );
        assert_eq!(access_text(&r), "read-only, root squashed");
        assert_eq!(RuleFlags::default().rule().unwrap(), None);
        for (f, says) in [
            (
                flags("10.0.0.0/33", "any", "any"),
                "--clients \"10.0.0.0/33\"",
            ),
            (flags("nfs.example", "any", "any"), "not an IP address"),
            (flags("any", "krb5", "any"), "--ro-rule \"krb5\""),
            (flags("any", "any", ""), "--rw-rule \"\""),
            (flags(",", "any", "any"), "--clients \",\""),
            (
                RuleFlags {
                    superuser: "krb5".into(),
                    ..flags("any", "any", "any")
                },
                "--superuser \"krb5\"",
            ),
            (
                RuleFlags {
                    anon: "pcuser".into(),
                    ..flags("any", "any", "any")
                },
                "--anon \"pcuser\"",
            ),
            (
                RuleFlags {
                    chown_mode: "x".into(),
                    ..flags("any", "any", "any")
                },
                "--chown-mode \"x\"",
            ),
        ] {
            let e = f.rule().unwrap_err().to_string();
            assert!(e.contains(says), "{e}");
        }
    }

    #[test]
    fn rules_read_back_for_a_patch_and_in_words() {
        let p = json!({"rules": [
            {"index": 1, "clients": [{"match": "::1"}], "ro_rule": ["any"], "rw_rule": ["any"],
             "protocols": ["nfs3"], "superuser": ["any"]},
            {"index": 2, "clients": [{"match": "any"}], "ro_rule": ["never"], "rw_rule": ["never"]}
        ]});
        let r = rules_of(&p);
        assert_eq!(r.len(), 2);
        assert!(r[0].get("index").is_none(), "the node numbers rules");
        assert_eq!(
            r[0]["superuser"],
            json!(["any"]),
            "a PATCH keeps every other field"
        );
        assert_eq!(
            rules_text(&p),
            "#1 ::1 read-write, root kept; #2 any no access"
        );
        assert_eq!(rules_text(&json!({"rules": []})), "(none: nobody)");
    }
}
