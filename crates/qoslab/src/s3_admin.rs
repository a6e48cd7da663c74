//! `qoslab s3 user|bucket ...`: S3 users (access keys) and buckets (with their QoS
//! policy) on a running node, over the REST API (ONTAP's /api/protocols/s3/services).

use anyhow::{anyhow, bail};
use clap::{Args, Subcommand};
use qos_core::parse_size;
use serde_json::{json, Map, Value};

use crate::http_client::{enc, print_json, print_records, text, ApiArgs, Client, ConnArgs, Output};

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab s3 user create alice                     # prints the keys (the secret only now)
  qoslab s3 user modify alice --regenerate-keys
  qoslab s3 bucket create gold --qos-policy QoS_500iops
  qoslab s3 bucket modify gold --qos-policy none
  qoslab s3 bucket list
  aws --endpoint-url http://127.0.0.1:9000 s3 ls s3://gold   # with alice's keys

The node serves S3 with `qoslab serve --listen-s3 ADDR`. See docs/S3.md.")]
pub struct S3Args {
    #[command(flatten)]
    api: ApiArgs,
    #[command(flatten)]
    conn: ConnArgs,
    #[command(subcommand)]
    cmd: S3Cmd,
}

#[derive(Subcommand)]
enum S3Cmd {
    /// S3 users: their access keys sign requests (AWS Signature V4).
    #[command(subcommand)]
    User(UserCmd),
    /// Buckets, each under a QoS policy like a volume.
    #[command(subcommand)]
    Bucket(BucketCmd),
}

#[derive(Subcommand)]
enum UserCmd {
    /// Create a user; prints the access key and the secret key (shown only here).
    Create {
        name: String,
        #[arg(long)]
        comment: Option<String>,
        /// Use this access key instead of a generated one (16-128 characters).
        #[arg(long, requires = "secret_key")]
        access_key: Option<String>,
        /// Use this secret key instead of a generated one (16-128 characters).
        #[arg(long, requires = "access_key")]
        secret_key: Option<String>,
    },
    /// List users and their access keys.
    List,
    /// Show one user.
    Show { name: String },
    /// Change the comment, or make new keys (the old ones stop working at once).
    Modify {
        name: String,
        #[arg(long)]
        comment: Option<String>,
        #[arg(long)]
        regenerate_keys: bool,
    },
    /// Delete a user (its keys stop working at once).
    Delete { name: String },
}

#[derive(Subcommand)]
enum BucketCmd {
    /// Create a bucket (S3 clients can also create one with CreateBucket).
    Create {
        name: String,
        #[command(flatten)]
        fields: BucketFields,
    },
    /// List buckets with their policy, objects and bytes stored.
    List,
    /// Show one bucket by name or uuid.
    Show { bucket: String },
    /// Move a bucket to another policy (`none` removes it), resize it, or comment it.
    Modify {
        bucket: String,
        #[command(flatten)]
        fields: BucketFields,
    },
    /// Delete an empty bucket.
    Delete { bucket: String },
}

/// What a bucket create or modify may set.
#[derive(Args)]
struct BucketFields {
    /// QoS policy name (`none` on modify: no policy).
    #[arg(long)]
    qos_policy: Option<String>,
    /// Declared size (an adaptive policy's allocated space): bytes or 100GB, 1TiB...
    #[arg(long)]
    size: Option<String>,
    #[arg(long)]
    comment: Option<String>,
}

fn base(c: &Client) -> anyhow::Result<String> {
    let r = c.call("GET", "/api/protocols/s3/services?fields=svm", None)?;
    let svm = r["records"][0]["svm"]["uuid"]
        .as_str()
        .ok_or_else(|| anyhow!("the node reports no S3 service"))?;
    Ok(format!("/api/protocols/s3/services/{svm}"))
}

fn size_bytes(s: &str) -> anyhow::Result<u64> {
    parse_size(s).map_err(|e| anyhow!("--size: {e}"))
}

pub fn run(args: S3Args) -> anyhow::Result<()> {
    let c = Client::connect(&args.api, &args.conn)?;
    let out = args.api.output;
    let base = base(&c)?;
    match args.cmd {
        S3Cmd::User(u) => user(&c, &base, u, out),
        S3Cmd::Bucket(b) => bucket(&c, &base, b, out),
    }
}

fn show_keys(r: &Value, out: Output) {
    if out == Output::Json {
        print_json(r);
        return;
    }
    let k = &r["records"][0];
    println!("       User: {}", text(&k["name"]));
    println!(" Access Key: {}", text(&k["access_key"]));
    println!(" Secret Key: {}", text(&k["secret_key"]));
    println!("(the secret key is not shown again: keep it now)");
}

fn user(c: &Client, base: &str, cmd: UserCmd, out: Output) -> anyhow::Result<()> {
    let users = format!("{base}/users");
    match cmd {
        UserCmd::Create {
            name,
            comment,
            access_key,
            secret_key,
        } => {
            let mut b = Map::new();
            b.insert("name".into(), json!(name));
            if let Some(cm) = comment {
                b.insert("comment".into(), json!(cm));
            }
            if let (Some(a), Some(s)) = (access_key, secret_key) {
                b.insert("access_key".into(), json!(a));
                b.insert("secret_key".into(), json!(s));
            }
            show_keys(&c.call("POST", &users, Some(&Value::Object(b)))?, out);
        }
        UserCmd::List => {
            let path = format!("{users}?fields=*");
            print_records(c, &path, out, &["Name", "Access Key", "Comment"], |u| {
                vec![
                    text(&u["name"]),
                    text(&u["access_key"]),
                    text(&u["comment"]),
                ]
            })?;
        }
        UserCmd::Show { name } => {
            let r = c.call("GET", &format!("{users}/{}", enc(&name)), None)?;
            if out == Output::Json {
                print_json(&r);
            } else {
                println!("       User: {}", text(&r["name"]));
                println!(" Access Key: {}", text(&r["access_key"]));
                println!("    Comment: {}", text(&r["comment"]));
            }
        }
        UserCmd::Modify {
            name,
            comment,
            regenerate_keys,
        } => {
            let mut b = Map::new();
            if let Some(cm) = comment {
                b.insert("comment".into(), json!(cm));
            }
            if b.is_empty() && !regenerate_keys {
                bail!("nothing to change: give --comment or --regenerate-keys");
            }
            let q = if regenerate_keys {
                "?regenerate_keys=true"
            } else {
                ""
            };
            let r = c.call(
                "PATCH",
                &format!("{users}/{}{q}", enc(&name)),
                Some(&Value::Object(b)),
            )?;
            if regenerate_keys {
                show_keys(&r, out);
            } else if out == Output::Json {
                print_json(&r);
            } else {
                println!("modified user {name}");
            }
        }
        UserCmd::Delete { name } => {
            c.call("DELETE", &format!("{users}/{}", enc(&name)), None)?;
            if out == Output::Json {
                print_json(&json!({}));
            } else {
                println!("deleted user {name}");
            }
        }
    }
    Ok(())
}

/// The bucket fields a create or modify sets (those given).
fn bucket_fields(f: BucketFields) -> anyhow::Result<Map<String, Value>> {
    let mut b = Map::new();
    if let Some(p) = f.qos_policy {
        b.insert("qos_policy".into(), json!({ "name": p }));
    }
    if let Some(s) = f.size {
        b.insert("size".into(), json!(size_bytes(&s)?));
    }
    if let Some(cm) = f.comment {
        b.insert("comment".into(), json!(cm));
    }
    Ok(b)
}

fn policy_of(b: &Value) -> String {
    b["qos_policy"]["name"].as_str().unwrap_or("-").to_string()
}

fn bucket(c: &Client, base: &str, cmd: BucketCmd, out: Output) -> anyhow::Result<()> {
    let buckets = format!("{base}/buckets");
    let show = |v: &Value| {
        if out == Output::Json {
            print_json(v);
            return;
        }
        println!("     Bucket: {}", text(&v["name"]));
        println!("       UUID: {}", text(&v["uuid"]));
        println!("       Size: {} bytes", text(&v["size"]));
        println!(
            "       Used: {} bytes in {} objects",
            text(&v["logical_used_size"]),
            text(&v["object_count"])
        );
        println!(" QoS Policy: {}", policy_of(v));
        println!("    Comment: {}", text(&v["comment"]));
    };
    match cmd {
        BucketCmd::Create { name, fields } => {
            let mut b = bucket_fields(fields)?;
            b.insert("name".into(), json!(name));
            show(&c.call("POST", &buckets, Some(&Value::Object(b)))?);
        }
        BucketCmd::List => {
            let path = format!("{buckets}?fields=*");
            let headers = ["Name", "Policy", "Objects", "Used", "UUID"];
            print_records(c, &path, out, &headers, |b| {
                vec![
                    text(&b["name"]),
                    policy_of(b),
                    text(&b["object_count"]),
                    text(&b["logical_used_size"]),
                    text(&b["uuid"]),
                ]
            })?;
        }
        BucketCmd::Show { bucket } => {
            let u = c.resolve(&buckets, &bucket, "bucket", "qoslab s3 bucket list")?;
            show(&c.get(&buckets, &u)?);
        }
        BucketCmd::Modify { bucket, fields } => {
            let u = c.resolve(&buckets, &bucket, "bucket", "qoslab s3 bucket list")?;
            let b = bucket_fields(fields)?;
            if b.is_empty() {
                bail!("nothing to change: give --qos-policy, --size or --comment");
            }
            show(&c.call("PATCH", &format!("{buckets}/{u}"), Some(&Value::Object(b)))?);
        }
        BucketCmd::Delete { bucket } => {
            let u = c.resolve(&buckets, &bucket, "bucket", "qoslab s3 bucket list")?;
            c.delete(&buckets, &u, "bucket", &bucket, out)?;
        }
    }
    Ok(())
}
