//! `qoslab serve`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use control_plane::api::front_end::ApiFrontEnd;
use control_plane::api::http as api_http;
use control_plane::api::ControlPlane;
use control_plane::tls::StreamTls;
use nbd_server::{NbdFrontEnd, NbdSettings, NbdTls, TlsMode};
use storage_node::front_end::ServerStats;
use storage_node::{Node, NodeConfig};

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab serve --config examples/node.toml
  qoslab serve --config node.toml --data-dir /var/lib/qoslab --listen-unix /run/qoslab.sock
  fio --ioengine=nbd --uri='nbd+unix:///vol500?socket=/run/qoslab.sock' --rw=randread --bs=4k ...
  qoslab serve --config node.toml --capacity-iops 20000     # an emulated 20,000 IOPS controller
  qoslab serve --config node.toml --calibrate               # capacity = what the backend measures
  qoslab serve --config node.toml --ceiling-mode ontap      # ONTAP's +50% burst tolerance
  qoslab serve --config node.toml --provisioned fsx-ontap-128 --provisioned-scale 0.001
                                                            # an emulated FSx for ONTAP file system

Floors (min_throughput, adaptive expected IOPS) are enforced only under an emulated
controller: declare [capacity] in the config, or --capacity-iops/--capacity-mbps, or
--calibrate. Without one the node runs at the backend's real speed with ceilings only.

With neither --listen-unix nor --listen-tcp (and nothing in the config), the node listens on
127.0.0.1:10809 and on DATA_DIR/nbd.sock. The REST API and /metrics listen on --listen-http
(default 127.0.0.1:8080; `off` disables them) over HTTPS, with a certificate generated in
DATA_DIR/tls/ on first start (clients trust DATA_DIR/tls/ca-cert.pem; `qoslab` commands do
so with --data-dir) unless --tls-cert/--tls-key are given; --insecure-http serves plain HTTP.
API users (HTTP basic auth) are created with `qoslab user create NAME --data-dir DIR`; once
one exists, every API request needs credentials. NBD over TLS: --nbd-tls on|require (the
same certificate; clients use nbds:// URIs). See docs/API.md and docs/CONFIG.md.
Policies and volumes live in DATA_DIR/state.db: the config file seeds a new data directory
only.")]
pub struct ServeArgs {
    /// Start in the background: return once the node serves (its ready lines printed) or
    /// failed (its error, exit 2); its output goes to DATA_DIR/serve.log.
    #[arg(long)]
    detach: bool,
    /// Node configuration (TOML): policies and volumes. See docs/CONFIG.md.
    #[arg(long, short)]
    config: Option<PathBuf>,
    /// Data directory holding volume files and state [default: $QOSLAB_DATA_DIR, else
    /// node.data_dir, else ./qoslab-data].
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Unix socket path to listen on (overrides node.listen_unix; a relative node.listen_unix
    /// is inside the data directory).
    #[arg(long)]
    listen_unix: Option<PathBuf>,
    /// TCP address to listen on, e.g. 127.0.0.1:10809 (overrides node.listen_tcp).
    #[arg(long)]
    listen_tcp: Option<SocketAddr>,
    /// Worker threads serving connections (default: one per CPU core).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: Option<u16>,
    /// Serve reads by memcpy from a shared read-only mapping instead of pread(2): less CPU
    /// per request while volume files stay in the page cache, much slower when they do not.
    #[arg(long)]
    mmap_reads: bool,
    /// Microseconds a connection spins for its next request before sleeping (0 disables;
    /// lowers queue-depth-1 latency at the cost of up to this much CPU per batch).
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=10_000))]
    busy_poll_us: Option<u64>,
    /// HTTP address of the REST API and /metrics, e.g. 127.0.0.1:8080 (overrides
    /// node.listen_http; default 127.0.0.1:8080; `off` disables the API).
    #[arg(long, value_name = "ADDR|off")]
    listen_http: Option<String>,
    /// File holding the bearer token that POST/PATCH/DELETE requests must send
    /// (`Authorization: Bearer TOKEN`). GET and /metrics stay open.
    #[arg(long, value_name = "PATH")]
    api_token_file: Option<PathBuf>,
    /// Allow the API on a non-loopback address with no API users and no --api-token-file.
    #[arg(long)]
    insecure: bool,
    /// Serve the REST API over plain HTTP instead of HTTPS (loopback labs, old scripts).
    #[arg(long)]
    insecure_http: bool,
    /// PEM certificate (chain) for HTTPS and NBD TLS, instead of the one generated in
    /// DATA_DIR/tls/. Needs --tls-key.
    #[arg(long, value_name = "PATH", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key of --tls-cert.
    #[arg(long, value_name = "PATH", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// NBD over TLS (STARTTLS): off (default), on (clients may upgrade), require (every
    /// client must: plaintext options get NBD_REP_ERR_TLS_REQD), like nbdkit --tls.
    #[arg(long, value_name = "off|on|require", default_value = "off")]
    nbd_tls: NbdTlsArg,
    /// Emulated controller: node-wide ops/s shared by all volumes (overrides [capacity]
    /// iops). Floors are enforced by mClock within it.
    #[arg(long, value_name = "IOPS", value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    capacity_iops: Option<u64>,
    /// Emulated controller: node-wide MiB/s (overrides [capacity] mbps).
    #[arg(long, value_name = "MIBPS", value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    capacity_mbps: Option<u64>,
    /// A request costs max(1, bytes / COST_UNIT) ops of the capacity (default 32KiB).
    #[arg(long, value_name = "SIZE")]
    cost_unit: Option<String>,
    /// How the controller shares its capacity: mclock (floors, then weights; default) or
    /// fifo (arrival order, ceilings only: an array without floors).
    #[arg(long, value_name = "mclock|fifo")]
    discipline: Option<String>,
    /// Measure the backend for a few seconds at start (4 KiB random writes, 1 MiB
    /// sequential reads) and use that as the controller's capacity.
    #[arg(long)]
    calibrate: bool,
    #[command(flatten)]
    s3: crate::s3_cmd::S3ServeArgs,
    #[command(flatten)]
    nfs: crate::nfs_cmd::NfsServeArgs,
    #[command(flatten)]
    iscsi: crate::iscsi_cmd::IscsiServeArgs,
    /// Connections each listener (NBD unix, NBD TCP, REST API, S3, NFS, iSCSI) serves at
    /// once; more are closed on accept, with a log line when the cap is reached.
    #[arg(long, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,
    /// Ceilings: strict (default; never above the ceiling beyond 5 ms of idle credit) or
    /// ontap (ONTAP's documented tolerance: up to +50% while tokens accumulated to 150% last).
    #[arg(long, value_name = "strict|ontap")]
    ceiling_mode: Option<String>,
    /// Emulate a provisioned file system in front of the volumes (overrides [provisioned]):
    /// fsx-ontap-128, -256, -512, -1024 or -2048 (AWS's throughput-capacity tiers: network,
    /// disk and SSD IOPS with baseline and burst, memory and NVMe read caches, a 5 Gb/s
    /// single-flow limit per connection). See docs/PROVISIONED.md.
    #[arg(long, value_name = "PRESET")]
    provisioned: Option<String>,
    /// With --provisioned: caches and burst buckets x SCALE (bursts last SCALE times as long).
    #[arg(
        long,
        value_name = "SCALE",
        default_value_t = 1.0,
        requires = "provisioned"
    )]
    provisioned_scale: f64,
    /// With --provisioned: every rate x SCALE (for machines slower than the file system).
    #[arg(
        long,
        value_name = "SCALE",
        default_value_t = 1.0,
        requires = "provisioned"
    )]
    provisioned_rate_scale: f64,
}

fn apply_burst_args(args: &ServeArgs, cfg: &mut NodeConfig) -> anyhow::Result<()> {
    if let Some(m) = &args.ceiling_mode {
        cfg.ceiling_mode = m
            .parse()
            .map_err(|e| anyhow::anyhow!("--ceiling-mode {e}"))?;
    }
    if let Some(p) = &args.provisioned {
        for (flag, x) in [
            ("--provisioned-scale", args.provisioned_scale),
            ("--provisioned-rate-scale", args.provisioned_rate_scale),
        ] {
            if !(x.is_finite() && x > 0.0 && x <= 1000.0) {
                anyhow::bail!("{flag} {x}: allowed range is above 0 up to 1000");
            }
        }
        let o = storage_node::provisioned::PresetOptions {
            scale: args.provisioned_scale,
            rate_scale: args.provisioned_rate_scale,
            ..Default::default()
        };
        cfg.provisioned = Some(storage_node::provisioned::FsSpec::preset(p, &o).ok_or_else(
            || {
                anyhow::anyhow!(
                    "--provisioned {p:?}: allowed presets are {}",
                    storage_node::provisioned::spec::preset_names().join(", ")
                )
            },
        )?);
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NbdTlsArg {
    Off,
    On,
    Require,
}

impl NbdTlsArg {
    fn mode(self) -> TlsMode {
        match self {
            NbdTlsArg::Off => TlsMode::Off,
            NbdTlsArg::On => TlsMode::On,
            NbdTlsArg::Require => TlsMode::Require,
        }
    }
}

/// The TLS identity: the given files, or the one generated in DATA_DIR/tls/.
fn tls_files(
    args: &ServeArgs,
    data_dir: &std::path::Path,
    names: &[String],
) -> anyhow::Result<control_plane::tls::TlsFiles> {
    Ok(match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => control_plane::tls::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
            ca: None,
        },
        _ => control_plane::tls::ensure_generated(data_dir, names)?,
    })
}

/// node.toml as `serve` reads it: the node's sections and each front end's, every one
/// checked before anything starts.
struct Config {
    node: NodeConfig,
    nbd: NbdSettings,
    nfs: nfs_server::NfsSettings,
    iscsi: iscsi_server::IscsiSettings,
}

/// The configuration: the file's (or the defaults), then the command line's.
fn config(args: &ServeArgs) -> anyhow::Result<Config> {
    let mut cfg = match &args.config {
        Some(p) => {
            let text = storage_node::config::read(p)?;
            let origin = p.display().to_string();
            let src = storage_node::config::Src::new(&text, &origin);
            let node = NodeConfig::parse(&text, &origin)?;
            let nbd = nbd_server::config::parse(&src, &node)?;
            let nfs = nfs_server::config::parse(&src)?;
            let iscsi = iscsi_server::config::parse(&src, &node)?;
            Config {
                node,
                nbd,
                nfs,
                iscsi,
            }
        }
        None => Config {
            node: NodeConfig::default(),
            nbd: NbdSettings::default(),
            nfs: Default::default(),
            iscsi: Default::default(),
        },
    };
    if args.mmap_reads {
        cfg.node.mmap_reads = true;
    }
    if let Some(us) = args.busy_poll_us {
        cfg.nbd.busy_poll = std::time::Duration::from_micros(us);
    }
    Ok(cfg)
}

/// The node's runtime (`--threads` workers, or one per core).
fn runtime(args: &ServeArgs) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = args.threads {
        builder.worker_threads(n as usize);
    }
    builder
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// The certificate and key, when HTTPS or NBD's TLS needs them (made for the listeners'
/// addresses when none are given).
fn tls_if_needed(
    args: &ServeArgs,
    data_dir: &std::path::Path,
    http: Option<SocketAddr>,
    tcp: Option<SocketAddr>,
) -> anyhow::Result<Option<control_plane::tls::TlsFiles>> {
    let mut names: Vec<String> = http.iter().map(|a| a.ip().to_string()).collect();
    names.extend(tcp.iter().map(|a| a.ip().to_string()));
    let need_tls = (http.is_some() && !args.insecure_http) || args.nbd_tls != NbdTlsArg::Off;
    Ok(if need_tls {
        Some(tls_files(args, data_dir, &names)?)
    } else {
        None
    })
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    let Config {
        node: mut cfg,
        nbd,
        mut nfs,
        mut iscsi,
    } = config(&args)?;
    // Every place the node will use, with its source, decided before anything is created
    // (crate::serve_start: relative config paths are inside the data directory).
    let data_dir_setting = crate::serve_start::data_dir(args.data_dir.as_deref(), &cfg);
    let data_dir = data_dir_setting.value.clone();
    if args.detach {
        return crate::serve_detach::run(&data_dir);
    }
    let (unix_setting, tcp_setting) = crate::serve_start::nbd_listeners(
        args.listen_unix.as_deref(),
        args.listen_tcp,
        &cfg,
        &data_dir,
    );
    if let Some(u) = &unix_setting {
        crate::serve_start::check_unix_socket(u, &data_dir)?;
    }
    let tcp = tcp_setting.as_ref().map(|s| s.value);
    if let Some(a) = tcp {
        if !a.ip().is_loopback() {
            tracing::warn!("listening on non-loopback address {a}: NBD has no authentication here");
        }
    }
    let http_setting = crate::serve_start::http_listener(args.listen_http.as_deref(), &cfg)?;
    let http: Option<SocketAddr> = http_setting.as_ref().map(|s| s.value);
    let token = api_token(&args)?;
    crate::iscsi_cmd::apply(&args.iscsi, &mut iscsi);
    let iscsi_credentials = crate::iscsi_cmd::prepare(&args.iscsi, &iscsi, &data_dir)?;
    // A start that fails from here on leaves the data directory as it found it.
    let mut guard = crate::serve_start::StartGuard::before_start(&data_dir);
    crate::serve_safety::private_data_dir(&data_dir)
        .with_context(|| format!("the data directory ({})", data_dir_setting.source))?;
    let _lock = control_plane::datadir::ServeLock::take(&data_dir).map_err(anyhow::Error::msg)?;
    guard.arm();
    // Descriptors are the node's budget for connections, volumes and NFS: all it may have.
    storage_node::conn_limit::raise_nofile();
    apply_capacity_args(&args, &mut cfg, &data_dir)?;
    apply_burst_args(&args, &mut cfg)?;
    crate::nfs_cmd::apply(&args.nfs, &mut nfs)?;
    let auth = Arc::new(control_plane::api::auth::Auth::new(
        token.clone(),
        Some(data_dir.clone()),
    ));
    let users = control_plane::api::users::load(&data_dir)?.len();
    if let Some(a) = http {
        check_api_exposure(&args, a, token.is_some(), users, &data_dir)?;
    }
    let tls = tls_if_needed(&args, &data_dir, http, tcp)?;
    let ready = Ready {
        cfg,
        nbd,
        nfs,
        data_dir,
        unix_setting,
        tcp_setting,
        http_setting,
        token: token.is_some(),
        auth,
        users,
        tls,
        iscsi,
        iscsi_credentials,
    };
    runtime(&args)?.block_on(serve(&args, ready, guard))
}

/// What [`run`] decided before the node starts: the configuration (the command line's
/// over the file's), where each listener goes (with its setting's source), who may use
/// the API, the TLS identity.
struct Ready {
    cfg: NodeConfig,
    nbd: NbdSettings,
    nfs: nfs_server::NfsSettings,
    data_dir: PathBuf,
    unix_setting: Option<crate::serve_start::Setting<PathBuf>>,
    tcp_setting: Option<crate::serve_start::Setting<SocketAddr>>,
    http_setting: Option<crate::serve_start::Setting<SocketAddr>>,
    /// An API token file was given.
    token: bool,
    auth: Arc<control_plane::api::auth::Auth>,
    users: usize,
    tls: Option<control_plane::tls::TlsFiles>,
    iscsi: iscsi_server::IscsiSettings,
    iscsi_credentials: Option<iscsi_server::Credentials>,
}

/// Open the state and the node, bind every front end, run until a signal (`guard`
/// leaves the data directory as it found it when a step fails).
async fn serve(
    args: &ServeArgs,
    r: Ready,
    mut guard: crate::serve_start::StartGuard,
) -> anyhow::Result<()> {
    let Ready {
        cfg,
        nbd,
        nfs,
        data_dir,
        unix_setting,
        tcp_setting,
        http_setting,
        token,
        auth,
        users,
        tls,
        iscsi,
        iscsi_credentials,
    } = r;
    let unix = unix_setting.as_ref().map(|s| s.value.clone());
    let http = http_setting.as_ref().map(|s| s.value);
    let stats = Arc::new(ServerStats::default());
    let cp = ControlPlane::open(&cfg, &data_dir, stats.clone()).map_err(anyhow::Error::msg)?;
    crate::iscsi_cmd::check_san_maps(&args.iscsi, &cp, &iscsi, &cfg.san)?;
    let node = cp.node.clone();
    crate::serve_safety::print_data_dir(&cp, &data_dir);
    let nbd_mode = args.nbd_tls.mode();
    let nbd = nbd_front_end(
        nbd,
        &cp,
        NbdListen {
            unix: &unix_setting,
            tcp: &tcp_setting,
            max_connections: args.max_connections as usize,
        },
        tls.as_ref()
            .filter(|_| nbd_mode != TlsMode::Off)
            .map(|f| (f, nbd_mode)),
    )?
    .with_stats(stats);
    if let Some(u) = &unix {
        guard.created(u);
    }
    if let Some(files) = &tls {
        crate::serve_ready::print_tls(files, nbd_mode);
    }
    let tcp_addr = nbd.tcp_addr();
    cp.set_nbd_endpoints(control_plane::api::NbdEndpoints {
        tcp: tcp_addr,
        unix: unix
            .as_ref()
            .map(|p| std::path::absolute(p).unwrap_or_else(|_| p.clone())),
        tls_required: nbd_mode == TlsMode::Require,
    });
    let sampler = control_plane::metrics::spawn_sampler(node.clone());
    let mut builder = Node::builder_for(node.clone()).front_end(nbd);
    if let Some(a) = http {
        let api = ApiListen {
            addr: a,
            source: http_setting.as_ref().map_or("", |s| s.source.as_str()),
            tls: tls.as_ref().filter(|_| !args.insecure_http),
            auth: auth.clone(),
            max_connections: args.max_connections as usize,
        };
        builder = builder.front_end(api_front_end(api, &cp, users, token)?);
    }
    if let Some(s3) = crate::s3_cmd::start(&args.s3, &cp, args.max_connections as usize)? {
        builder = builder.front_end(s3);
    }
    if let Some(nfs) = crate::nfs_cmd::start(&node, &nfs, &cp, args.max_connections as usize)? {
        builder = builder.front_end(nfs);
    }
    if let Some(iscsi) =
        crate::iscsi_cmd::start(&iscsi, iscsi_credentials, args.max_connections as usize)?
    {
        cp.san().set_iscsi_endpoint(iscsi.local_addr());
        builder = builder.front_end(iscsi);
    }
    let running = builder.spawn().await?;
    guard.started();
    crate::serve_ready::print_ready(
        &node,
        unix.as_deref(),
        tcp_addr,
        nbd_mode == TlsMode::Require,
    );
    running.run_until(shutdown_signal()).await;
    sampler.abort();
    Ok(())
}

/// The API token file's token, if one is given (never empty).
fn api_token(args: &ServeArgs) -> anyhow::Result<Option<String>> {
    let Some(p) = &args.api_token_file else {
        return Ok(None);
    };
    let t = std::fs::read_to_string(p)
        .with_context(|| format!("reading the API token file {}", p.display()))?;
    let t = t.trim().to_string();
    if t.is_empty() {
        anyhow::bail!("the API token file {} is empty", p.display());
    }
    Ok(Some(t))
}

/// Refuse an open REST API beyond loopback (unless --insecure); warn of plain HTTP there.
fn check_api_exposure(
    args: &ServeArgs,
    a: SocketAddr,
    token: bool,
    users: usize,
    data_dir: &std::path::Path,
) -> anyhow::Result<()> {
    if !a.ip().is_loopback() && !token && users == 0 && !args.insecure {
        anyhow::bail!(
            "refusing to serve the REST API on non-loopback address {a} with no API \
             users and no --api-token-file (anyone could change policies and delete \
             volumes); create a user (qoslab user create NAME --data-dir {}), give a \
             token file, or --insecure to do it anyway",
            data_dir.display()
        );
    }
    if !a.ip().is_loopback() && args.insecure_http {
        tracing::warn!("--insecure-http on non-loopback address {a}: credentials and data cross the network in clear");
    }
    Ok(())
}

/// Where and how the REST API listens, as decided.
struct ApiListen<'a> {
    addr: SocketAddr,
    /// The listen address's source, for errors.
    source: &'a str,
    /// The TLS identity, unless the API is plain HTTP.
    tls: Option<&'a control_plane::tls::TlsFiles>,
    auth: Arc<control_plane::api::auth::Auth>,
    max_connections: usize,
}

/// The REST API's front end, bound, with its line at start.
fn api_front_end(
    l: ApiListen<'_>,
    cp: &Arc<ControlPlane>,
    users: usize,
    token: bool,
) -> anyhow::Result<ApiFrontEnd> {
    let server_tls = match l.tls {
        Some(f) => Some(control_plane::tls::server_config(f, &[b"http/1.1"])?),
        None => None,
    };
    let cfg = api_http::HttpConfig {
        auth: l.auth,
        tls: server_tls,
        max_connections: l.max_connections,
    };
    let a = l.addr;
    let api = ApiFrontEnd::bind(a, cp.clone(), cfg).map_err(|e| {
        crate::serve_start::listen_error(
            "the REST API",
            &a.to_string(),
            l.source,
            "--listen-http ADDR (or off)",
            &e,
        )
    })?;
    let who = match (users, token) {
        (0, false) => "open: no API users, no token".to_string(),
        (0, true) => "changes need the bearer token".to_string(),
        (n, t) => format!(
            "{n} API user(s){}: every request needs credentials",
            if t { " and the bearer token" } else { "" }
        ),
    };
    println!(
        "qoslab: api: {}://{} ({who})",
        api.scheme(),
        api.local_addr()
    );
    Ok(api)
}

/// Where NBD listens, as decided (with each setting's source, for errors).
struct NbdListen<'a> {
    unix: &'a Option<crate::serve_start::Setting<std::path::PathBuf>>,
    tcp: &'a Option<crate::serve_start::Setting<SocketAddr>>,
    max_connections: usize,
}

/// The NBD front end: its settings from the config's keys (a `default_export` the state database
/// does not hold is ignored, with a warning), TLS when asked for, bound where `at` says (a
/// bind error names the setting and its source).
fn nbd_front_end(
    settings: NbdSettings,
    cp: &ControlPlane,
    at: NbdListen<'_>,
    tls: Option<(&control_plane::tls::TlsFiles, TlsMode)>,
) -> anyhow::Result<NbdFrontEnd> {
    let mut settings = NbdSettings {
        max_connections: at.max_connections,
        ..settings
    };
    if let Some(d) = &settings.default_export {
        if !cp.volume_uuids().iter().any(|(n, _)| n == d) {
            tracing::warn!(volume = %d, "default_export names no volume in the state database; ignored");
            settings.default_export = None;
        }
    }
    if let Some((files, mode)) = tls {
        settings.tls = Some(NbdTls {
            mode,
            acceptor: Arc::new(StreamTls::new(files)?),
        });
    }
    let unix = at.unix.as_ref().map(|s| s.value.as_path());
    let tcp = at.tcp.as_ref().map(|s| s.value);
    NbdFrontEnd::bind(unix, tcp, settings).map_err(|e| match e {
        storage_node::errors::NodeError::Listen { addr, source } => {
            let (what, src, flag) = match (at.unix, at.tcp) {
                (Some(u), _) if u.value.display().to_string() == addr => {
                    ("NBD (unix socket)", u.source.clone(), "--listen-unix PATH")
                }
                (_, Some(t)) => ("NBD (TCP)", t.source.clone(), "--listen-tcp ADDR"),
                _ => ("NBD", String::new(), "--listen-unix or --listen-tcp"),
            };
            crate::serve_start::listen_error(what, &addr, &src, flag, &source)
        }
        other => anyhow::Error::new(other),
    })
}

/// The emulated controller from the command line (over the config's [capacity]).
fn apply_capacity_args(
    args: &ServeArgs,
    cfg: &mut NodeConfig,
    data_dir: &std::path::Path,
) -> anyhow::Result<()> {
    let explicit = args.capacity_iops.is_some() || args.capacity_mbps.is_some();
    if args.calibrate && explicit {
        anyhow::bail!("give either --calibrate or --capacity-iops/--capacity-mbps, not both");
    }
    if cfg.array.model.is_some() && (explicit || args.calibrate) {
        anyhow::bail!(
            "the config's [capacity] declares an array (read/write points): --capacity-iops, \
             --capacity-mbps and --calibrate would replace it; remove one of them"
        );
    }
    if args.cost_unit.is_some() && !cfg.array.accounting.is_whole() {
        anyhow::bail!(
            "--cost-unit applies to io_accounting = \"whole\" only; the config counts {}",
            cfg.array.accounting
        );
    }
    let mut cap = cfg.capacity.unwrap_or_default();
    if explicit {
        cfg.calibrate = false;
        cap.iops = args.capacity_iops.unwrap_or(0);
        cap.mbps = args.capacity_mbps.unwrap_or(0);
    }
    if let Some(u) = &args.cost_unit {
        cap.cost_unit = qos_core::parse_size(u).map_err(|e| anyhow::anyhow!("--cost-unit: {e}"))?;
    }
    if let Some(d) = &args.discipline {
        cap.discipline = d.parse().map_err(|e| anyhow::anyhow!("--discipline {e}"))?;
    }
    if args.calibrate || cfg.calibrate {
        println!("qoslab: calibrating the backend in {} (4 KiB random writes, 1 MiB sequential reads, 4 s)...", data_dir.display());
        let c = storage_node::calibrate::calibrate(data_dir, 4.0)
            .with_context(|| format!("calibrating in {}", data_dir.display()))?;
        let measured = c.capacity();
        cap.iops = measured.iops;
        cap.mbps = measured.mbps;
        println!(
            "qoslab: calibrated: {:.0} IOPS (4 KiB random write), {:.0} MiB/s (1 MiB sequential read), {} threads",
            c.write_4k_iops, c.read_1m_mibps, c.threads
        );
    }
    cap.validate("--capacity").map_err(anyhow::Error::msg)?;
    let any_flag =
        explicit || args.calibrate || args.cost_unit.is_some() || args.discipline.is_some();
    if cap.is_set() || cfg.array.needs_controller() {
        cfg.capacity = Some(cap);
    } else if any_flag {
        anyhow::bail!(
            "--cost-unit/--discipline need a capacity: give --capacity-iops, --capacity-mbps or --calibrate (or [capacity] in the config)"
        );
    }
    Ok(())
}

/// Resolves on the first SIGINT, SIGTERM or SIGHUP: the node then stops gracefully (the
/// process's lifecycle hands it the signal instead of tearing down; a second one forces).
async fn shutdown_signal() {
    let (stop, _graceful) = crate::graceful_stop();
    stop.notified().await;
    tracing::info!("signal received");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `serve --config FILE EXTRA...` as the command line gives it.
    fn args(file: &std::path::Path, extra: &[&str]) -> ServeArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            serve: ServeArgs,
        }
        let mut v = vec!["x", "--config", file.to_str().unwrap()];
        v.extend(extra);
        Cli::parse_from(v).serve
    }

    #[test]
    fn every_section_is_read_and_checked_before_anything_starts() {
        let dir = test_support::TestDir::new("serve-config");
        let file = dir.join("node.toml");
        let vol = "[[volume]]\nname = \"db\"\nsize = \"1MiB\"\n";
        std::fs::write(
            &file,
            format!(
                "[node]\ndefault_export = \"db\"\nbusy_poll_us = 7\n\
                 [nfs]\nlisten = \"127.0.0.1:2049\"\nrtmax = \"32KiB\"\n\
                 [iscsi]\nlisten = \"127.0.0.1:3260\"\n{vol}\
                 [[iscsi.lun]]\nvolume = \"db\"\n"
            ),
        )
        .unwrap();
        let c = config(&args(&file, &[])).unwrap();
        assert_eq!(c.node.volumes.len(), 1);
        assert_eq!(c.nbd.default_export.as_deref(), Some("db"));
        assert_eq!(c.nbd.busy_poll, std::time::Duration::from_micros(7));
        assert_eq!(c.nfs.rtmax, 32 * 1024);
        assert_eq!(c.iscsi.luns.len(), 1);
        // The command line over the file.
        let c = config(&args(&file, &["--busy-poll-us", "0"])).unwrap();
        assert_eq!(c.nbd.busy_poll, std::time::Duration::ZERO);
        // Each front end's section refused as its parser words it, with the file and line.
        let refused = |text: String| {
            std::fs::write(&file, &text).unwrap();
            format!("{:#}", config(&args(&file, &[])).err().expect(&text))
        };
        let at = file.display();
        assert_eq!(
            refused(format!("{vol}[node]\nbusy_poll_us = 20000\n")),
            format!("{at}:5: node.busy_poll_us = 20000: allowed range is 0 (off) to 10000")
        );
        assert_eq!(
            refused(format!("{vol}[nfs]\nwtmax = 100\n")),
            format!("{at}:4: nfs.wtmax = 100: allowed values are multiples of 4096 from 4096 to 1048576 (4KiB..1MiB)")
        );
        assert_eq!(
            refused(format!("{vol}[[iscsi.lun]]\nvolume = \"logs\"\n")),
            format!("{at}:5: iscsi.lun[0] (volume \"logs\"): volume = \"logs\": not a [[volume]] of this file (its block volumes: db)")
        );
        // A key no section owns: the node's parser names every allowed one.
        assert!(
            refused(format!("{vol}[nfss]\n")).starts_with(&format!(
                "{at}:4: unknown field `nfss`, expected one of `node`, `capacity`, `provisioned`, `backend`, `nfs`, `export_policy`, `iscsi`,"
            )),
        );
    }
}
