//! `qoslab iscsi serve`: files as iSCSI LUNs (no QoS), the iSCSI target on its own; and
//! `qoslab serve`'s iSCSI options (the node's front end, its LUNs from node.toml).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use iscsi_server::config::auth::AuthType;
use iscsi_server::config::DEFAULT_IQN;
use iscsi_server::target::valid_iscsi_name;
use iscsi_server::IscsiSettings;
use iscsi_server::{
    Access, Auth, ChapSecret, Config, Credentials, FileLun, LogicalUnit, Server, StaticLun,
    StaticTarget,
};

#[derive(Args)]
pub struct IscsiArgs {
    #[command(subcommand)]
    command: IscsiCommand,
}

#[derive(Subcommand)]
enum IscsiCommand {
    /// Serve files as LUNs of one iSCSI target, without QoS: the node's iSCSI front end
    /// on its own.
    Serve(ServeArgs),
}

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab iscsi serve --lun /srv/lun0.img,size=10GiB --listen 127.0.0.1:3260
  qoslab iscsi serve --lun a.img,size=1GiB --lun b.img,size=1GiB,lun=1,initiators=iqn.1993-08.org.debian:01:host1
  iscsi-ls -s iscsi://127.0.0.1:3260
  iscsi-test-cu --dataloss iscsi://127.0.0.1:3260/iqn.2026-01.lab.qoslab:target0/0
  iscsiadm -m discovery -t st -p 127.0.0.1:3260 && iscsiadm -m node --login

A LUN is PATH[,size=SIZE][,lun=N][,bs=512|4096][,ro][,initiators=IQN[+IQN...]]: the file
(created sparse when size= is given and it is missing; grown sparse when smaller; never
shrunk), its size, its LUN number (default: the next free one from 0), its logical block
size (default 512), read-only, and the initiators that see it (default: every initiator).
CHAP: --chap-file holds `USER SECRET` on one line (kept out of the process table).
Beyond loopback, --chap-file and initiators= on every LUN are required (or --insecure).
See docs/ISCSI.md for what is served and what is refused.")]
pub struct ServeArgs {
    /// Address to listen on (iSCSI's port is 3260).
    #[arg(long, default_value = "127.0.0.1:3260")]
    listen: String,
    /// The target's iSCSI name.
    #[arg(long, default_value = DEFAULT_IQN)]
    iqn: String,
    /// The target's alias (TargetAlias).
    #[arg(long)]
    alias: Option<String>,
    /// A LUN: PATH[,size=SIZE][,lun=N][,bs=512|4096][,ro][,initiators=IQN[+IQN...]] (repeatable).
    #[arg(long = "lun", required = true)]
    luns: Vec<String>,
    /// CHAP the initiators must pass: a file with `USER SECRET`.
    #[arg(long, value_name = "FILE")]
    chap_file: Option<PathBuf>,
    /// Mutual CHAP: what the target answers when an initiator challenges it (`USER SECRET`).
    #[arg(long, value_name = "FILE", requires = "chap_file")]
    mutual_chap_file: Option<PathBuf>,
    /// Connections served at once; more are closed on accept.
    #[arg(long, default_value_t = 256)]
    max_connections: usize,
    /// The address SendTargets reports (default: the address the initiator reached).
    #[arg(long, value_name = "IP:PORT")]
    portal: Option<String>,
    /// Serve beyond loopback without --chap-file, or with a LUN open to every initiator
    /// (a lab network you trust).
    #[arg(long)]
    insecure: bool,
}

pub fn run(args: IscsiArgs) -> anyhow::Result<()> {
    match args.command {
        IscsiCommand::Serve(a) => serve(a),
    }
}

/// `qoslab serve`'s iSCSI options (the node's front end: off unless --listen-iscsi or
/// `[iscsi] listen`).
#[derive(Args, Debug, Default)]
pub struct IscsiServeArgs {
    /// Serve node.toml's `[[iscsi.lun]]` (block volumes, each under its volume's QoS
    /// policy) over iSCSI on this address, e.g. 127.0.0.1:3260 (overrides [iscsi] listen;
    /// default off). Initiators log in to `[iscsi] iqn` (default
    /// iqn.2026-01.lab.qoslab:target0) as `[[iscsi.credentials]]` says; beyond loopback
    /// every LUN must name its initiators and each of them must use CHAP. See docs/ISCSI.md.
    #[arg(long, value_name = "ADDR")]
    listen_iscsi: Option<std::net::SocketAddr>,
    /// Serve iSCSI beyond loopback even where a LUN is open to every initiator or an
    /// initiator that sees one logs in without CHAP (a lab network you trust); also lets
    /// the REST API map LUNs to such initiators.
    #[arg(long)]
    insecure_iscsi: bool,
}

/// The command line over the config's `[iscsi]`.
pub fn apply(args: &IscsiServeArgs, iscsi: &mut IscsiSettings) {
    if let Some(a) = args.listen_iscsi {
        iscsi.listen = Some(a);
    }
}

/// Everything the node's iSCSI front end needs checked before the node starts: the
/// exposure rule beyond loopback, and the CHAP secrets of `[[iscsi.credentials]]` read
/// from their files (relative paths are inside `data_dir`). `None`: iSCSI is off.
pub fn prepare(
    args: &IscsiServeArgs,
    s: &IscsiSettings,
    data_dir: &Path,
) -> anyhow::Result<Option<Credentials>> {
    let Some(addr) = s.listen else {
        return Ok(None);
    };
    let problems = iscsi_server::config::auth::exposure_problems(s);
    if !addr.ip().is_loopback() && !problems.is_empty() {
        if !args.insecure_iscsi {
            anyhow::bail!(
                "refusing to serve iSCSI on non-loopback address {addr}: an initiator's name \
                 is only what it claims, so beyond loopback every LUN names its initiators and \
                 each of them proves a CHAP secret:\n  {}\nfix node.toml (docs/ISCSI.md, \
                 \"Logins\"), or pass --insecure-iscsi on a network you trust",
                problems.join("\n  ")
            );
        }
        for p in &problems {
            tracing::warn!("--insecure-iscsi on non-loopback address {addr}: {p}");
        }
    }
    credentials(s, data_dir).map(Some)
}

/// node.toml's `[[lun]]`, `[[igroup]]` and `[[lun_map]]` applied when new or edited (under
/// the same rules as REST requests), then the LUN maps in the state database checked at
/// start as node.toml's `[[iscsi.lun]]` are: beyond loopback every initiator a LUN is
/// mapped to logs in with CHAP (a map made under --insecure-iscsi, or before node.toml's
/// credentials changed, stops the start).
pub fn check_san_maps(
    args: &IscsiServeArgs,
    cp: &control_plane::api::ControlPlane,
    settings: &IscsiSettings,
    declared: &storage_node::config::san::SanDecls,
) -> anyhow::Result<()> {
    cp.san().set_iscsi_settings(settings.clone());
    cp.san().set_insecure_iscsi(args.insecure_iscsi);
    cp.san()
        .apply_declarations(declared)
        .map_err(anyhow::Error::msg)?;
    let problems = cp.san().exposure_problems();
    if !problems.is_empty() {
        anyhow::bail!(
            "refusing to serve iSCSI: the LUN maps in the state database expose LUNs \
             without CHAP:\n  {}\ngive those initiators CHAP in node.toml's \
             [[iscsi.credentials]] (docs/ISCSI.md, \"Logins\"), unmap them (start with \
             --listen-iscsi 127.0.0.1:PORT to reach the API), or pass --insecure-iscsi on a \
             network you trust",
            problems.join("\n  ")
        );
    }
    Ok(())
}

/// The secrets of `[[iscsi.credentials]]`, read from their files.
fn credentials(s: &IscsiSettings, data_dir: &Path) -> anyhow::Result<Credentials> {
    let mut out = Credentials::default();
    for c in &s.credentials {
        let what = format!("iscsi.credentials (initiator {:?}) at {}", c.name(), c.at);
        let read = |f: &Option<PathBuf>, field: &str| -> anyhow::Result<Option<ChapSecret>> {
            let Some(f) = f else { return Ok(None) };
            let path = data_dir.join(f);
            read_chap(&path)
                .map(Some)
                .with_context(|| format!("{what}: {field} = {:?}", f.display().to_string()))
        };
        let access = match c.auth {
            AuthType::None => Access::Open,
            AuthType::Deny => Access::Deny,
            AuthType::Chap => {
                let initiator = read(&c.chap_file, "chap_file")?
                    .with_context(|| format!("{what}: chap needs chap_file"))?;
                let target = read(&c.outbound_chap_file, "outbound_chap_file")?;
                if target
                    .as_ref()
                    .is_some_and(|t| t.secret == initiator.secret)
                {
                    anyhow::bail!(
                        "{what}: outbound_chap_file holds the same secret as chap_file; mutual \
                         CHAP needs two secrets (an initiator refuses a target that answers \
                         with its own)"
                    );
                }
                Access::Chap(Auth { initiator, target })
            }
        };
        match &c.initiator {
            None => out.default = access,
            Some(i) => out.initiators.push((i.clone(), access)),
        }
    }
    Ok(out)
}

/// Bind the node's iSCSI front end when asked for (the node's builder runs it), and say
/// where it listens.
pub fn start(
    s: &IscsiSettings,
    credentials: Option<Credentials>,
    max_connections: usize,
) -> anyhow::Result<Option<iscsi_server::IscsiFrontEnd>> {
    let (Some(addr), Some(credentials)) = (s.listen, credentials) else {
        return Ok(None);
    };
    let fe = iscsi_server::IscsiFrontEnd::bind(addr, s)
        .with_context(|| format!("listening for iSCSI on {addr}"))?
        .max_connections(max_connections)
        .credentials(credentials);
    println!(
        "qoslab: iscsi: {} (target {}; {})",
        fe.local_addr(),
        s.iqn,
        fe.summary()
    );
    Ok(Some(fe))
}

/// One `--lun` argument.
#[derive(Debug, PartialEq)]
struct LunSpec {
    path: PathBuf,
    size: Option<u64>,
    number: Option<u16>,
    block_size: u32,
    read_only: bool,
    initiators: Option<Vec<String>>,
}

fn parse_lun(s: &str) -> anyhow::Result<LunSpec> {
    let mut parts = s.split(',');
    let path = parts.next().unwrap_or_default();
    anyhow::ensure!(
        !path.is_empty(),
        "--lun {s:?}: expected PATH[,size=SIZE][,lun=N][,bs=512|4096][,ro][,initiators=IQN+...]"
    );
    let mut spec = LunSpec {
        path: PathBuf::from(path),
        size: None,
        number: None,
        block_size: 512,
        read_only: false,
        initiators: None,
    };
    for opt in parts {
        match opt.split_once('=') {
            Some(("size", v)) => {
                spec.size = Some(qos_core::units::parse_size(v).with_context(|| format!("--lun {s:?}: size {v:?}"))?)
            }
            Some(("lun", v)) => {
                let n: u16 = v.parse().ok().filter(|n| *n <= 16383).with_context(|| {
                    format!("--lun {s:?}: lun={v:?} is not a LUN number 0..16383")
                })?;
                spec.number = Some(n);
            }
            Some(("bs", v)) => {
                spec.block_size = match v {
                    "512" => 512,
                    "4096" | "4k" | "4K" => 4096,
                    _ => anyhow::bail!("--lun {s:?}: bs={v:?} (allowed: 512, 4096)"),
                }
            }
            Some(("initiators", v)) => {
                let list: Vec<String> = v.split('+').map(str::to_string).collect();
                for i in &list {
                    anyhow::ensure!(valid_iscsi_name(i), "--lun {s:?}: {i:?} is not an iSCSI name (iqn./eui./naa.)");
                }
                spec.initiators = Some(list);
            }
            None if opt == "ro" => spec.read_only = true,
            _ => anyhow::bail!(
                "--lun {s:?}: unknown option {opt:?} (known: size=SIZE, lun=N, bs=512|4096, ro, initiators=IQN+IQN)"
            ),
        }
    }
    Ok(spec)
}

fn read_chap(path: &Path) -> anyhow::Result<ChapSecret> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default();
    let mut w = line.split_whitespace();
    let (Some(user), Some(secret), None) = (w.next(), w.next(), w.next()) else {
        anyhow::bail!("{}: expected one line `USER SECRET`", path.display());
    };
    // RFC 7143 §12.1.3: secrets of at least 12 bytes; iscsiadm refuses shorter ones too.
    anyhow::ensure!(
        (12..=255).contains(&secret.len()),
        "{}: the CHAP secret has {} bytes; it must have 12 to 255",
        path.display(),
        secret.len()
    );
    use std::os::unix::fs::PermissionsExt;
    if let Ok(m) = std::fs::metadata(path) {
        if m.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                "{}: the CHAP secret is readable by other users (mode {:o}): chmod 600 it",
                path.display(),
                m.permissions().mode() & 0o7777
            );
        }
    }
    Ok(ChapSecret {
        user: user.to_string(),
        secret: secret.as_bytes().to_vec(),
    })
}

fn build_target(a: &ServeArgs) -> anyhow::Result<StaticTarget> {
    anyhow::ensure!(
        valid_iscsi_name(&a.iqn),
        "--iqn {:?} is not an iSCSI name (iqn.YYYY-MM.reversed.domain[:id])",
        a.iqn
    );
    let mut luns: Vec<StaticLun> = Vec::new();
    let mut next = 0u16;
    for s in &a.luns {
        let spec = parse_lun(s)?;
        let number = match spec.number {
            Some(n) => n,
            None => {
                while luns.iter().any(|l| l.number == next) {
                    next += 1;
                }
                next
            }
        };
        anyhow::ensure!(
            !luns.iter().any(|l| l.number == number),
            "--lun {s:?}: LUN {number} is given twice"
        );
        let lun = FileLun::open(&spec.path, spec.size, spec.block_size, spec.read_only)?;
        luns.push(StaticLun {
            number,
            lu: LogicalUnit::new(Arc::new(lun)),
            initiators: spec.initiators,
        });
    }
    let auth = match &a.chap_file {
        Some(f) => Some(Auth {
            initiator: read_chap(f)?,
            target: a.mutual_chap_file.as_deref().map(read_chap).transpose()?,
        }),
        None => None,
    };
    Ok(StaticTarget {
        name: a.iqn.clone(),
        alias: a.alias.clone(),
        luns,
        auth,
    })
}

/// What keeps the standalone target from serving beyond loopback (empty: nothing), the
/// node's rule for one secret shared by every initiator: CHAP, and every LUN masked.
/// Checked before any LUN file is opened or made.
fn standalone_exposure(a: &ServeArgs) -> anyhow::Result<Vec<String>> {
    use std::net::ToSocketAddrs;
    let addrs: Vec<std::net::SocketAddr> = a
        .listen
        .to_socket_addrs()
        .with_context(|| format!("--listen {:?}: expected HOST:PORT", a.listen))?
        .collect();
    if addrs.iter().all(|addr| addr.ip().is_loopback()) {
        return Ok(Vec::new());
    }
    let mut problems = Vec::new();
    if a.chap_file.is_none() {
        problems.push("no --chap-file: every initiator logs in without a secret".to_string());
    }
    for l in &a.luns {
        if parse_lun(l)?.initiators.is_none() {
            problems.push(format!(
                "--lun {l:?} is open to every initiator: give it initiators=IQN[+IQN...]"
            ));
        }
    }
    Ok(problems)
}

fn serve(a: ServeArgs) -> anyhow::Result<()> {
    let problems = standalone_exposure(&a)?;
    if !problems.is_empty() {
        anyhow::ensure!(
            a.insecure,
            "refusing to serve iSCSI on non-loopback address {}: an initiator's name is only \
             what it claims:\n  {}\ngive --chap-file and initiators= on every LUN, or pass \
             --insecure on a network you trust",
            a.listen,
            problems.join("\n  ")
        );
        for p in &problems {
            tracing::warn!("--insecure on non-loopback address {}: {p}", a.listen);
        }
    }
    let target = build_target(&a)?;
    let summary: Vec<String> = target
        .luns
        .iter()
        .map(|l| {
            format!(
                "LUN {} = {} bytes",
                l.number,
                l.lu.unit().blocks * l.lu.unit().block_size as u64
            )
        })
        .collect();
    let config = Config {
        max_connections: a.max_connections.max(1),
        portal: a.portal.clone(),
        ..Config::default()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let server = Server::bind(&a.listen, Arc::new(target), config)
            .await
            .with_context(|| format!("listening on {}", a.listen))?;
        let addr = server.local_addr()?;
        let (stop, _graceful) = crate::graceful_stop();
        let shared = server.shared.clone();
        eprintln!(
            "qoslab iscsi: serving {} on {addr} ({})",
            a.iqn,
            summary.join(", ")
        );
        server.run(async move { stop.notified().await }).await?;
        use std::sync::atomic::Ordering::Relaxed;
        eprintln!(
            "qoslab iscsi: stopped; logins={} login_failures={} commands={} protocol_errors={}",
            shared.stats.logins.load(Relaxed),
            shared.stats.login_failures.load(Relaxed),
            shared.stats.commands.load(Relaxed),
            shared.stats.protocol_errors.load(Relaxed)
        );
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lun_syntax() {
        let l =
            parse_lun("/srv/a.img,size=1GiB,lun=3,bs=4096,ro,initiators=iqn.a:b+iqn.c:d").unwrap();
        assert_eq!(
            l,
            LunSpec {
                path: "/srv/a.img".into(),
                size: Some(1 << 30),
                number: Some(3),
                block_size: 4096,
                read_only: true,
                initiators: Some(vec!["iqn.a:b".into(), "iqn.c:d".into()]),
            }
        );
        for (bad, says) in [
            ("", "expected PATH"),
            ("a,size=lots", "size"),
            ("a,lun=16384", "0..16383"),
            ("a,bs=1024", "allowed: 512, 4096"),
            ("a,initiators=host1", "not an iSCSI name"),
            ("a,zz", "unknown option"),
        ] {
            let err = format!("{:#}", parse_lun(bad).unwrap_err());
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    /// The node's checks before it starts: beyond loopback, an open LUN or an initiator
    /// without CHAP is refused (unless --insecure-iscsi); CHAP files are read, relative
    /// ones inside the data directory, and a broken one names its entry.
    #[test]
    fn prepare_checks_exposure_and_reads_secrets() {
        let dir = test_support::TestDir::new("iscsi-prepare");
        let data = dir.join("data");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join("a.chap"), "alice alice-secret-1\n").unwrap();
        std::fs::write(dir.join("t.chap"), "target target-secret-2\n").unwrap();
        std::fs::write(dir.join("same.chap"), "target alice-secret-1\n").unwrap();
        let a = "iqn.2026-01.lab.example:a";
        let cfg = |listen: &str, creds: &str| {
            let text = format!(
                "[[volume]]\nname = \"db\"\nsize = \"1MiB\"\n\
                 [iscsi]\nlisten = \"{listen}\"\n\
                 [[iscsi.lun]]\nvolume = \"db\"\ninitiators = [\"{a}\"]\n{creds}"
            );
            let node = storage_node::NodeConfig::parse(&text, "node.toml").unwrap();
            let src = storage_node::config::Src::new(&text, "node.toml");
            iscsi_server::config::parse(&src, &node).unwrap()
        };
        let chap_a = |outbound: &str| {
            format!(
                "[[iscsi.credentials]]\ninitiator = \"default\"\nauthentication_type = \"deny\"\n\
                 [[iscsi.credentials]]\ninitiator = \"{a}\"\nauthentication_type = \"chap\"\n\
                 chap_file = \"a.chap\"\n{outbound}"
            )
        };
        let strict = IscsiServeArgs::default();
        let insecure = IscsiServeArgs {
            insecure_iscsi: true,
            ..Default::default()
        };
        // Loopback: open logins are fine.
        let c = prepare(&strict, &cfg("127.0.0.1:3260", ""), &data)
            .unwrap()
            .unwrap();
        assert_eq!(c.access(a), Access::Open);
        // Beyond loopback: refused, naming the initiator and the way out.
        let err = format!(
            "{:#}",
            prepare(&strict, &cfg("0.0.0.0:3260", ""), &data).unwrap_err()
        );
        assert!(
            err.starts_with("refusing to serve iSCSI on non-loopback address 0.0.0.0:3260")
                && err.contains(&format!(
                    "initiator \"{a}\" sees LUN 0 (volume \"db\") without CHAP"
                ))
                && err.contains("--insecure-iscsi"),
            "{err}"
        );
        assert!(prepare(&insecure, &cfg("0.0.0.0:3260", ""), &data).is_ok());
        // CHAP for the one initiator that sees the LUN: served; the secrets are read.
        let out = format!(
            "outbound_chap_file = \"{}\"\n",
            dir.join("t.chap").display()
        );
        let c = prepare(&strict, &cfg("0.0.0.0:3260", &chap_a(&out)), &data)
            .unwrap()
            .unwrap();
        let Access::Chap(auth) = c.access(&a.to_uppercase()) else {
            panic!("{c:?}")
        };
        assert_eq!(auth.initiator.user, "alice");
        assert_eq!(auth.initiator.secret, b"alice-secret-1");
        assert_eq!(auth.target.map(|t| t.user).as_deref(), Some("target"));
        assert_eq!(c.access("iqn.2026-01.lab.example:z"), Access::Deny);
        // A missing file, and mutual CHAP with the initiator's own secret: named errors.
        std::fs::remove_file(data.join("a.chap")).unwrap();
        let err = format!(
            "{:#}",
            prepare(&strict, &cfg("127.0.0.1:3260", &chap_a("")), &data).unwrap_err()
        );
        assert!(
            err.starts_with(&format!(
                "iscsi.credentials (initiator \"{a}\") at node.toml:12: chap_file = \"a.chap\": reading {}",
                data.join("a.chap").display()
            )),
            "{err}"
        );
        std::fs::write(data.join("a.chap"), "alice alice-secret-1\n").unwrap();
        let same = format!(
            "outbound_chap_file = \"{}\"\n",
            dir.join("same.chap").display()
        );
        let err = format!(
            "{:#}",
            prepare(&strict, &cfg("127.0.0.1:3260", &chap_a(&same)), &data).unwrap_err()
        );
        assert!(err.contains("holds the same secret as chap_file"), "{err}");
        // No listener: nothing to check or read.
        let off = IscsiSettings::default();
        assert!(prepare(&strict, &off, &data).unwrap().is_none());
    }

    #[test]
    fn the_standalone_target_beyond_loopback_needs_chap_and_masked_luns() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            serve: ServeArgs,
        }
        let args = |extra: &[&str]| {
            let mut v = vec!["x"];
            v.extend(extra);
            Cli::parse_from(v).serve
        };
        let masked = "a.img,size=1MiB,initiators=iqn.2026-01.lab.example:a";
        // Loopback (the default): nothing to check.
        assert!(standalone_exposure(&args(&["--lun", "a.img"]))
            .unwrap()
            .is_empty());
        let open = standalone_exposure(&args(&[
            "--listen",
            "0.0.0.0:3260",
            "--lun",
            "a.img",
            "--lun",
            masked,
        ]))
        .unwrap();
        assert_eq!(
            open,
            [
                "no --chap-file: every initiator logs in without a secret",
                "--lun \"a.img\" is open to every initiator: give it initiators=IQN[+IQN...]",
            ]
        );
        let closed = args(&[
            "--listen",
            "0.0.0.0:3260",
            "--lun",
            masked,
            "--chap-file",
            "c",
        ]);
        assert!(standalone_exposure(&closed).unwrap().is_empty());
        let err = standalone_exposure(&args(&["--listen", "nowhere", "--lun", masked]));
        assert!(format!("{:#}", err.unwrap_err()).starts_with("--listen \"nowhere\""));
    }
}
