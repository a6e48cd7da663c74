//! `qoslab nfs serve`: directories over NFSv3 (no QoS), the NFS front end on its own.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Subcommand};
use nfs_server::export::valid_junction;
use nfs_server::{Config, ExportSpec, NfsServer, Service};
use storage_node::nas::export_rule::{policy_from, RuleText};

#[derive(Args)]
pub struct NfsArgs {
    #[command(subcommand)]
    command: NfsCommand,
}

#[derive(Subcommand)]
enum NfsCommand {
    /// Serve directories over NFSv3 (with MOUNT v3 and the portmapper on the same port),
    /// without QoS: the node's NFS front end on its own.
    Serve(ServeArgs),
}

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab nfs serve --export /vol1=/srv/vol1 --listen 127.0.0.1:2049
  qoslab nfs serve --export /vol1=/srv/vol1,size=10GiB --export /ro=/srv/ro,ro,clients=10.0.0.0/8
  mount -t nfs -o vers=3,proto=tcp,port=2049,mountport=2049,nolock 127.0.0.1:/vol1 /mnt
  nfs-ls 'nfs://127.0.0.1/vol1?nfsport=2049&mountport=2049'

An export is JUNCTION=DIR[,id=N][,size=SIZE][,ro][,clients=MATCH[+MATCH...]]
[,superuser=any|sys|none][,anon=UID]: the junction path clients mount, the directory served,
the export id its file handles carry (default: its place on the command line, 1, 2, ...:
keep it, or handles from before a restart are STALE), its quota (writes past it get
NFS3ERR_NOSPC), read-only, which clients may mount it (addresses or ADDR/PREFIX, `any`;
default loopback only), whether root stays root (default: kept for the loopback default,
squashed to the anonymous user for a clients= rule, as ONTAP's superuser `none`) and the
anonymous user (default 65534). Permissions are enforced as a POSIX file server does.
Only NFSv3 over TCP is served: an NFSv4 mount is refused (PROG_MISMATCH, versions 3..3).
Without NLM, Linux clients mount with `nolock`. See docs/NFS.md.")]
pub struct ServeArgs {
    /// Address for NFS, MOUNT and the portmapper.
    #[arg(long, default_value = "127.0.0.1:2049")]
    listen: String,
    /// An export: JUNCTION=DIR[,id=N][,size=SIZE][,ro][,clients=MATCH[+MATCH...]]
    /// [,superuser=any|sys|none][,anon=UID] (repeatable).
    #[arg(long = "export", required = true)]
    exports: Vec<String>,
    /// ONTAP's -mount-rootonly: MOUNT only from a reserved source port (below 1024, bound
    /// by root: the kernel client's and root's libnfs). `off` behind NAT (qemu's user
    /// network) or for clients run by other users.
    #[arg(long, value_name = "on|off", default_value = "on", value_parser = on_off, action = clap::ArgAction::Set)]
    mount_rootonly: bool,
    /// ONTAP's -nfs-rootonly: every NFS call only from a reserved port (a host shared
    /// with untrusted users: only its root, i.e. its kernel client, may speak NFS).
    #[arg(long, value_name = "on|off", default_value = "off", value_parser = on_off, action = clap::ArgAction::Set)]
    nfs_rootonly: bool,
    /// Largest READ (FSINFO rtmax; ONTAP's default -tcp-max-xfer-size is 64KiB).
    #[arg(long, default_value = "64KiB")]
    rtmax: String,
    /// Largest WRITE (FSINFO wtmax).
    #[arg(long, default_value = "64KiB")]
    wtmax: String,
}

fn on_off(s: &str) -> Result<bool, String> {
    match s {
        "on" | "true" | "enabled" => Ok(true),
        "off" | "false" | "disabled" => Ok(false),
        _ => Err(format!("{s:?}: give on or off")),
    }
}

pub fn run(args: NfsArgs) -> anyhow::Result<()> {
    match args.command {
        NfsCommand::Serve(a) => serve(a),
    }
}

/// `qoslab serve`'s NFS options: the node's NFS front end (off unless --listen-nfs or
/// `[nfs] listen`).
#[derive(Args, Debug, Default)]
pub struct NfsServeArgs {
    /// Serve the node's NAS volumes over NFSv3 on this address (MOUNT and the portmapper
    /// on the same port), e.g. 127.0.0.1:2049 (overrides [nfs] listen; default off).
    /// Clients mount `HOST:/JUNCTION` with `vers=3,port=P,mountport=P,nolock`, from a
    /// reserved port (root's; `[nfs] mount_rootonly = false` behind NAT); each volume's
    /// export policy says who they are (root squashed unless `superuser`); see docs/NFS.md.
    #[arg(long, value_name = "ADDR")]
    listen_nfs: Option<std::net::SocketAddr>,
    /// Largest NFS READ the node advertises (FSINFO rtmax; default 64KiB, ONTAP's
    /// -tcp-max-xfer-size: a client splits a 128 KiB read into two operations).
    #[arg(long, value_name = "SIZE")]
    nfs_rtmax: Option<String>,
    /// Largest NFS WRITE the node advertises (FSINFO wtmax; default 64KiB).
    #[arg(long, value_name = "SIZE")]
    nfs_wtmax: Option<String>,
}

/// The command line over the config's `[nfs]`.
pub fn apply(args: &NfsServeArgs, nfs: &mut nfs_server::NfsSettings) -> anyhow::Result<()> {
    use nfs_server::config::check_xfer;
    if let Some(a) = args.listen_nfs {
        nfs.listen = Some(a);
    }
    for (flag, v, slot) in [
        ("--nfs-rtmax", &args.nfs_rtmax, &mut nfs.rtmax),
        ("--nfs-wtmax", &args.nfs_wtmax, &mut nfs.wtmax),
    ] {
        if let Some(t) = v {
            let b = qos_core::units::parse_size(t).with_context(|| format!("{flag} {t:?}"))?;
            *slot = check_xfer(flag, b).map_err(anyhow::Error::msg)?;
        }
    }
    Ok(())
}

/// Bind the node's NFS front end when asked for (the node's builder runs it).
pub fn start(
    node: &Arc<storage_node::Node>,
    s: &nfs_server::NfsSettings,
    cp: &control_plane::api::ControlPlane,
    max_connections: usize,
) -> anyhow::Result<Option<nfs_server::NfsFrontEnd>> {
    let Some(addr) = s.listen else {
        return Ok(None);
    };
    if !addr.ip().is_loopback() {
        tracing::warn!(
            "NFS on non-loopback address {addr}: AUTH_SYS trusts the client's uid; export \
             policies (default: loopback only) decide which clients may mount"
        );
    }
    let fe = nfs_server::NfsFrontEnd::bind(addr, node, s)
        .with_context(|| format!("listening for NFS on {addr}"))?
        .max_connections(max_connections);
    cp.nas().set_endpoint(fe.local_addr());
    let nas = node.volumes().into_iter().filter(|v| v.is_nas()).count();
    println!(
        "qoslab: nfs: {} ({nas} NAS volume(s); NFSv3 with MOUNT and the portmapper on this port; rtmax {} wtmax {})",
        fe.local_addr(),
        s.rtmax,
        s.wtmax
    );
    Ok(Some(fe))
}

fn xfer(name: &str, s: &str) -> anyhow::Result<u32> {
    let v = qos_core::units::parse_size(s).with_context(|| format!("--{name} {s:?}"))?;
    u32::try_from(v).map_err(|_| anyhow::anyhow!("--{name} {s:?} is too large (at most 1MiB)"))
}

/// Parses `JUNCTION=DIR[,id=N][,size=SIZE][,ro][,clients=MATCH[+MATCH...]]
/// [,superuser=...][,anon=UID]`; `place` is its 1-based place on the command line (its
/// export id unless `id=` says).
pub fn parse_export(s: &str, place: usize) -> anyhow::Result<ExportSpec> {
    let known =
        "id=N, size=SIZE, ro, rw, clients=MATCH[+MATCH...], superuser=any|sys|none, anon=UID";
    let mut parts = s.split(',');
    let head = parts.next().unwrap_or_default();
    let (junction, dir) = head.split_once('=').ok_or_else(|| {
        anyhow::anyhow!("--export {s:?}: expected JUNCTION=DIR[,size=SIZE][,ro][,clients=...]")
    })?;
    valid_junction(junction).map_err(|e| anyhow::anyhow!("--export {s:?}: {e}"))?;
    let mut quota = None;
    let mut id = u32::try_from(place).ok();
    let mut ro = false;
    let mut rule = RuleText::loopback();
    let mut superuser = None;
    for opt in parts {
        match opt.split_once('=') {
            Some(("size", v)) => {
                quota = Some(
                    qos_core::units::parse_size(v)
                        .with_context(|| format!("--export {s:?}: size {v:?}"))?,
                )
            }
            Some(("id", v)) => {
                id = Some(v.parse::<u32>().ok().filter(|i| *i > 0).ok_or_else(|| {
                    anyhow::anyhow!("--export {s:?}: id {v:?} is not a number 1..4294967295")
                })?)
            }
            Some(("clients", v)) => {
                rule = RuleText::new(v.split('+').map(str::to_string).collect());
            }
            Some(("superuser", v)) => superuser = Some(vec![v.to_string()]),
            Some(("anon", v)) => rule.anonymous_user = v.to_string(),
            None if opt == "ro" => ro = true,
            None if opt == "rw" => ro = false,
            _ => anyhow::bail!("--export {s:?}: unknown option {opt:?} (known: {known})"),
        }
    }
    if let Some(su) = superuser {
        rule.superuser = su;
    }
    if ro {
        rule.rw_rule = vec!["never".into()];
    }
    let policy =
        policy_from("export", &[rule]).map_err(|e| anyhow::anyhow!("--export {s:?}: {e}"))?;
    Ok(ExportSpec {
        id: id.ok_or_else(|| anyhow::anyhow!("--export {s:?}: give id=N"))?,
        path: junction.to_string(),
        root: PathBuf::from(dir),
        quota,
        policy,
    })
}

fn serve(a: ServeArgs) -> anyhow::Result<()> {
    let cfg = Config {
        rtmax: xfer("rtmax", &a.rtmax)?,
        wtmax: xfer("wtmax", &a.wtmax)?,
        mount_rootonly: a.mount_rootonly,
        nfs_rootonly: a.nfs_rootonly,
    };
    storage_node::conn_limit::raise_nofile();
    let svc = Arc::new(Service::new(cfg).map_err(anyhow::Error::msg)?);
    svc.set_fd_budget(storage_node::conn_limit::nfs_fd_budget(
        1,
        nfs_server::conn::Limits::default().max_connections,
    ));
    for (i, e) in a.exports.iter().enumerate() {
        let spec = parse_export(e, i + 1)?;
        let (path, root) = (spec.path.clone(), spec.root.clone());
        let ex = svc
            .add_export(spec)
            .with_context(|| format!("exporting {} as {path}", root.display()))?;
        tracing::info!(
            "exporting {} as {path} ({} bytes used)",
            root.display(),
            ex.tree.used()
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let server = NfsServer::bind(&a.listen, svc)
            .await
            .with_context(|| format!("listening on {}", a.listen))?;
        let addr = server.local_addr()?;
        // The stop hook is in place before the line that tells a supervisor (or a test)
        // the server is up: a SIGTERM from then on stops it in order and prints the counts.
        let (stop, _graceful) = crate::graceful_stop();
        eprintln!(
            "qoslab nfs: serving NFSv3 on {addr} (rtmax {} wtmax {})",
            cfg.rtmax, cfg.wtmax
        );
        let service = server.service.clone();
        server.run(async move { stop.notified().await }).await?;
        eprintln!("qoslab nfs: stopped; {}", call_counts(&service));
        Ok(())
    })
}

/// `calls: GETATTR=3 READ=100 ... garbage=0`: what the server answered, for logs and tests.
fn call_counts(svc: &Service) -> String {
    use std::sync::atomic::Ordering::Relaxed;
    let mut s = String::from("calls:");
    for (i, n) in svc.counters.nfs.iter().enumerate() {
        let n = n.load(Relaxed);
        if n > 0 {
            s.push_str(&format!(" {}={n}", nfs_proto::nfs3::proc_::NAMES[i]));
        }
    }
    s.push_str(&format!(
        " (stable WRITEs={}) garbage={}",
        svc.counters.stable_writes.load(Relaxed),
        svc.counters.garbage.load(Relaxed)
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_port_options_take_on_and_off() {
        use clap::Parser;
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            a: ServeArgs,
        }
        let t = T::try_parse_from(["t", "--export", "/v=/d", "--mount-rootonly", "off"]).unwrap();
        assert!(!t.a.mount_rootonly && !t.a.nfs_rootonly);
        let t = T::try_parse_from(["t", "--export", "/v=/d", "--nfs-rootonly", "on"]).unwrap();
        assert!(
            t.a.mount_rootonly && t.a.nfs_rootonly,
            "ONTAP's defaults otherwise"
        );
        assert!(T::try_parse_from(["t", "--export", "/v=/d", "--nfs-rootonly", "maybe"]).is_err());
    }

    #[test]
    fn export_syntax() {
        let e = parse_export("/vol1=/srv/a,size=1GiB,ro", 3).unwrap();
        assert_eq!(
            (e.path.as_str(), e.quota, e.id),
            ("/vol1", Some(1 << 30), 3)
        );
        let r = &e.policy.rules[0];
        assert!(
            r.rw.never && r.superuser.any,
            "read-only; loopback keeps root"
        );
        let e = parse_export("/v=/d,clients=10.0.0.0/8+::1,id=7,anon=1001", 1).unwrap();
        let r = &e.policy.rules[0];
        assert_eq!((r.clients.len(), e.id, r.anon), (2, 7, 1001));
        assert!(
            !r.superuser.any && !r.superuser.sys,
            "a clients= rule squashes root"
        );
        let e = parse_export("/v=/d,clients=any,superuser=sys", 1).unwrap();
        assert!(e.policy.rules[0].superuser.sys);
        for (bad, says) in [
            ("/v", "JUNCTION=DIR"),
            ("v=/d", "junction path"),
            ("/v=/d,zz", "unknown option"),
            ("/v=/d,size=lots", "size"),
            ("/v=/d,id=0", "id \"0\""),
            ("/v=/d,superuser=root", "superuser"),
            ("/v=/d,anon=nobody", "anonymous_user"),
        ] {
            let err = format!("{:#}", parse_export(bad, 1).unwrap_err());
            assert!(err.contains(says), "{bad}: {err}");
        }
    }
}
