//! The S3 family's command-line options, and where the endpoint and keys come from: the
//! command line, then the plan, then the environment (the AWS CLI's variables).

use std::path::{Path, PathBuf};

use clap::Args;
use loadgen::s3::{Endpoint, Weights};

use super::expect::Expect;
use super::plan::{size_dist, Buckets, Conn, Count, TestPlan};

#[derive(Args, Debug, Default, Clone)]
#[command(next_help_heading = "S3 (--profile s3 and [s3] plans; docs/S3-BENCH.md)")]
pub struct S3Args {
    /// The S3 endpoint, http://HOST:PORT (path-style). Default: the plan's [s3] endpoint,
    /// then $AWS_ENDPOINT_URL_S3 / $AWS_ENDPOINT_URL, else an embedded qoslab S3 node
    /// started for the run.
    #[arg(long, value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// Region the requests are signed for (default: [s3] region, $AWS_REGION,
    /// $AWS_DEFAULT_REGION, us-east-1).
    #[arg(long, value_name = "REGION")]
    pub s3_region: Option<String>,
    /// A file whose first entry holds the keys: `USER ACCESS_KEY SECRET_KEY` (qoslab serve's
    /// --s3-keys-file format) or `ACCESS_KEY SECRET_KEY`. Default: [s3] keys, then
    /// $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY.
    #[arg(long, value_name = "PATH")]
    pub s3_keys_file: Option<PathBuf>,
    /// Load generators: ssh destinations NAME[=ADDR],... The qoslab binary is copied to
    /// each over ssh and runs `qoslab s3-driver` there; results are merged ("All hosts").
    /// Default: [s3] hosts, else drivers in this process.
    #[arg(long, value_name = "LIST")]
    pub s3_hosts: Option<String>,
    /// An ssh option for the load generators (repeatable; e.g. --s3-ssh-option=-F
    /// --s3-ssh-option=./ssh_config). Yours come first and win.
    #[arg(long, value_name = "OPT", allow_hyphen_values = true)]
    pub s3_ssh_option: Vec<String>,
    /// --profile s3: the operation mix as weights, OP=WEIGHT,... with OP one of get,
    /// existing-get, put, delete, list, stat. Default get=70,put=20,delete=10.
    #[arg(long, value_name = "MIX")]
    pub s3_mix: Option<String>,
    /// --profile s3: object size, SIZE or MIN..MAX (e.g. 4KiB, 1KiB..1MiB). Default
    /// 1KiB..1MiB.
    #[arg(long, value_name = "SIZE")]
    pub s3_size: Option<String>,
    /// --profile s3: how sizes between MIN and MAX are drawn: uniform or lognormal (the
    /// default for a range).
    #[arg(long, value_name = "DIST")]
    pub s3_size_distribution: Option<String>,
    /// --profile s3: objects per bucket uploaded before the run (default 100).
    #[arg(long, value_name = "N")]
    pub s3_objects: Option<u64>,
    /// --profile s3: concurrent clients per load generator (default 8).
    #[arg(long, value_name = "N")]
    pub s3_clients: Option<u32>,
    /// --profile s3: use this bucket (created if missing, kept after unless created).
    /// Default: qoslab-bench-0, made and removed by the run.
    #[arg(long, value_name = "NAME")]
    pub s3_bucket: Option<String>,
    /// --profile s3: stop after this many requests per load generator instead of --runtime.
    #[arg(long, value_name = "N")]
    pub s3_ops: Option<u64>,
    /// --profile s3: leave the objects (and buckets) the run wrote.
    #[arg(long)]
    pub s3_no_clean: bool,
    /// --profile s3: an expectation on the merged results (repeatable), e.g.
    /// 'GET.ops_per_s ~= 200 +-2%', 'PUT.mib_per_s >= 49', 'ALL.errors <= 0'.
    #[arg(long, value_name = "EXPR")]
    pub s3_expect: Vec<String>,
}

impl S3Args {
    /// Apply the connection options to the plan's.
    pub fn apply_conn(&self, c: &mut Conn) -> Result<(), String> {
        if let Some(e) = &self.s3_endpoint {
            c.endpoint = Some(e.clone());
        }
        if let Some(r) = &self.s3_region {
            c.region = Some(r.clone());
        }
        if let Some(k) = &self.s3_keys_file {
            c.keys_file = Some(k.clone());
            c.access_key = None;
            c.secret_key = None;
        }
        if let Some(h) = &self.s3_hosts {
            c.hosts = h
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            if c.hosts.is_empty() {
                return Err(format!("--s3-hosts {h:?}: no host named"));
            }
        }
        c.ssh_options.extend(self.s3_ssh_option.iter().cloned());
        Ok(())
    }

    /// Whether any option only `--profile s3` takes is given.
    pub fn profile_options(&self) -> Option<&'static str> {
        [
            (self.s3_mix.is_some(), "--s3-mix"),
            (self.s3_size.is_some(), "--s3-size"),
            (
                self.s3_size_distribution.is_some(),
                "--s3-size-distribution",
            ),
            (self.s3_objects.is_some(), "--s3-objects"),
            (self.s3_clients.is_some(), "--s3-clients"),
            (self.s3_bucket.is_some(), "--s3-bucket"),
            (self.s3_ops.is_some(), "--s3-ops"),
            (self.s3_no_clean, "--s3-no-clean"),
            (!self.s3_expect.is_empty(), "--s3-expect"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }

    /// The profile's one test, from these options.
    pub fn profile_test(&self) -> Result<TestPlan, String> {
        let mut t = TestPlan::new("s3");
        t.weights = parse_mix(self.s3_mix.as_deref().unwrap_or("get=70,put=20,delete=10"))?;
        let (min, max) = match self
            .s3_size
            .as_deref()
            .unwrap_or("1KiB..1MiB")
            .split_once("..")
        {
            Some((a, b)) => (size_arg(a)?, size_arg(b)?),
            None => {
                let s = size_arg(self.s3_size.as_deref().unwrap_or_default())?;
                (s, s)
            }
        };
        let dist = self
            .s3_size_distribution
            .as_deref()
            .unwrap_or(if min == max { "constant" } else { "lognormal" });
        t.sizes = size_dist(dist, min, max).map_err(|m| format!("--s3-size: {m}"))?;
        if let Some(n) = self.s3_objects {
            if n > 1_000_000 {
                return Err(format!("--s3-objects {n}: allowed up to 1000000"));
            }
            t.objects = Count::Constant(n);
        }
        if let Some(c) = self.s3_clients {
            if !(1..=4096).contains(&c) {
                return Err(format!("--s3-clients {c}: allowed 1 .. 4096"));
            }
            t.clients = c;
        }
        if let Some(b) = &self.s3_bucket {
            if !super::plan::valid_bucket(b) {
                return Err(format!(
                    "--s3-bucket {b:?}: a bucket name is 3-63 characters of a-z, 0-9, '.', '-'"
                ));
            }
            t.buckets = Buckets::Named(b.clone());
        }
        if let Some(n) = self.s3_ops {
            if n == 0 {
                return Err("--s3-ops 0: give a positive count".into());
            }
            t.ops = Some(n);
        }
        t.clean_after = !self.s3_no_clean;
        for e in &self.s3_expect {
            t.expect
                .push(Expect::parse(e).map_err(|m| format!("--s3-expect: {m}"))?);
        }
        Ok(t)
    }
}

fn size_arg(s: &str) -> Result<u64, String> {
    qos_core::parse_size(s.trim()).map_err(|e| format!("--s3-size {s:?}: {e}"))
}

/// `get=70,put=20,delete=10` → weights.
pub fn parse_mix(s: &str) -> Result<Weights, String> {
    let mut w = Weights::default();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (op, n) = part
            .split_once('=')
            .ok_or_else(|| format!("--s3-mix {part:?}: expected OP=WEIGHT, e.g. get=70"))?;
        let n: u32 = n
            .trim()
            .parse()
            .map_err(|_| format!("--s3-mix {part:?}: the weight must be a whole number"))?;
        let slot = match op.trim().to_ascii_lowercase().as_str() {
            "get" | "read" => &mut w.read,
            "existing-get" | "existing_read" | "existing-read" => &mut w.existing_read,
            "put" | "write" => &mut w.write,
            "delete" => &mut w.delete,
            "list" => &mut w.list,
            "stat" | "head" => &mut w.stat,
            o => {
                return Err(format!(
                    "--s3-mix: unknown operation {o:?}; allowed get, existing-get, put, delete, list, stat"
                ))
            }
        };
        *slot = n;
    }
    if w.total() == 0 {
        return Err(format!("--s3-mix {s:?}: every weight is 0"));
    }
    Ok(w)
}

/// The keys of a keys file: its first entry, `USER ACCESS SECRET` or `ACCESS SECRET`.
pub fn keys_from_file(path: &Path) -> Result<(String, String), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("S3 keys file {}: {e}", path.display()))?;
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        return match f[..] {
            [_, a, s] | [a, s] => Ok((a.to_string(), s.to_string())),
            _ => Err(format!(
                "{}:{}: expected `USER ACCESS_KEY SECRET_KEY` or `ACCESS_KEY SECRET_KEY`, found {} field(s)",
                path.display(),
                i + 1,
                f.len()
            )),
        };
    }
    Err(format!("S3 keys file {}: no entry", path.display()))
}

/// An environment lookup (the real one, or a test's).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The process environment.
pub fn process_env(k: &str) -> Option<String> {
    std::env::var(k).ok().filter(|v| !v.is_empty())
}

/// The endpoint URL, if one is given anywhere (None: the embedded node).
pub fn endpoint_url(c: &Conn, env: Env) -> Option<String> {
    c.endpoint
        .clone()
        .or_else(|| env("AWS_ENDPOINT_URL_S3"))
        .or_else(|| env("AWS_ENDPOINT_URL"))
}

/// The endpoint with its keys and region resolved.
pub fn resolve(c: &Conn, url: String, env: Env) -> Result<Endpoint, String> {
    let region = c
        .region
        .clone()
        .or_else(|| env("AWS_REGION"))
        .or_else(|| env("AWS_DEFAULT_REGION"))
        .unwrap_or_else(|| "us-east-1".into());
    let (access_key, secret_key) = match (&c.access_key, &c.secret_key, &c.keys_file) {
        (Some(a), Some(s), _) => (a.clone(), s.clone()),
        (Some(_), None, _) | (None, Some(_), _) => {
            return Err("[s3]: access_key and secret_key go together".into())
        }
        (None, None, Some(f)) => keys_from_file(f)?,
        (None, None, None) => match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
            (Some(a), Some(s)) => (a, s),
            _ => {
                return Err(format!(
                    "no S3 keys for {url}: give --s3-keys-file, [s3] keys_file or access_key/secret_key, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                ))
            }
        },
    };
    Ok(Endpoint {
        url,
        region,
        access_key,
        secret_key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_the_command_line_the_plan_or_the_environment() {
        let dir = test_support::TestDir::new("s3keys");
        let f = dir.join("keys");
        std::fs::write(&f, "# users\nroot AKIA1 SECRET1\nbob AKIA2 SECRET2\n").unwrap();
        assert_eq!(
            keys_from_file(&f).unwrap(),
            ("AKIA1".into(), "SECRET1".into())
        );
        std::fs::write(&f, "AK SK\n").unwrap();
        assert_eq!(keys_from_file(&f).unwrap(), ("AK".into(), "SK".into()));
        std::fs::write(&f, "\n\na b c d\n").unwrap();
        assert!(keys_from_file(&f).unwrap_err().contains("keys:3: expected"));
        let env = |k: &str| match k {
            "AWS_ACCESS_KEY_ID" => Some("ENVAK".to_string()),
            "AWS_SECRET_ACCESS_KEY" => Some("ENVSK".to_string()),
            "AWS_ENDPOINT_URL" => Some("http://env:9000".to_string()),
            "AWS_REGION" => Some("garage".to_string()),
            _ => None,
        };
        let c = Conn::default();
        let url = endpoint_url(&c, &env).unwrap();
        let e = resolve(&c, url, &env).unwrap();
        assert_eq!(
            (e.url.as_str(), e.region.as_str(), e.access_key.as_str()),
            ("http://env:9000", "garage", "ENVAK")
        );
        let mut c = Conn {
            endpoint: Some("http://plan".into()),
            ..Conn::default()
        };
        S3Args {
            s3_keys_file: Some(f.clone()),
            s3_hosts: Some("h0, h1".into()),
            ..S3Args::default()
        }
        .apply_conn(&mut c)
        .unwrap();
        assert_eq!(c.hosts, ["h0", "h1"]);
        std::fs::write(&f, "AK SK\n").unwrap();
        let e = resolve(&c, endpoint_url(&c, &env).unwrap(), &env).unwrap();
        assert_eq!(
            (e.url.as_str(), e.access_key.as_str()),
            ("http://plan", "AK")
        );
        let none = |_: &str| None;
        let e = resolve(&Conn::default(), "http://x".into(), &none).unwrap_err();
        assert!(e.contains("AWS_ACCESS_KEY_ID"), "{e}");
        assert!(endpoint_url(&Conn::default(), &none).is_none());
    }

    #[test]
    fn profile_options() {
        let t = S3Args {
            s3_mix: Some("get=100".into()),
            s3_size: Some("4KiB".into()),
            s3_bucket: Some("b200".into()),
            s3_clients: Some(16),
            s3_expect: vec!["GET.ops_per_s ~= 200 +-2%".into()],
            ..S3Args::default()
        }
        .profile_test()
        .unwrap();
        assert_eq!(t.weights.read, 100);
        assert_eq!(t.sizes, loadgen::s3::SizeDist::Constant { size: 4096 });
        assert_eq!(t.buckets, Buckets::Named("b200".into()));
        assert_eq!((t.clients, t.expect.len()), (16, 1));
        let d = S3Args::default().profile_test().unwrap();
        assert_eq!(
            d.sizes,
            loadgen::s3::SizeDist::LogNormal {
                min: 1024,
                max: 1 << 20
            }
        );
        assert_eq!(
            (d.weights.read, d.weights.write, d.weights.delete),
            (70, 20, 10)
        );
        assert!(parse_mix("copy=1")
            .unwrap_err()
            .contains("unknown operation"));
        assert!(parse_mix("get=0")
            .unwrap_err()
            .contains("every weight is 0"));
        assert!(S3Args {
            s3_size: Some("2GiB".into()),
            ..S3Args::default()
        }
        .profile_test()
        .unwrap_err()
        .contains("1 GiB"));
    }
}
