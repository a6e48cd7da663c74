//! `qoslab bench`: run a plan (or a family's built-in profile), judge expectations, store
//! everything in the results database. Exit 0 when every expectation holds, 1 when any fails
//! (or a job fails), 3 when none fails but some are inconclusive (the job's diagnosis
//! explains the failure: docs/DIAGNOSIS.md), 2 on usage or plan errors. Families come from `workloads::registry`:
//! their plan tables, `--profile` names, options and `--help` lines.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use fio::executor::fio_version;
use fio::{Executor, LiveSink, RealFio, RemoteFio};
use harness::host::Env;
use harness::node_api::{NodeApi, NodeHandle};
use harness::plan::parse_duration_str;
use harness::store::Store;
use harness::target::{temp_dir, Target};
use harness::{Options, Outcome, Plan, ProfileRequest, RunEnv};
use report::Format;

use crate::ui::TerminalUi;

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab bench examples/bench-qos500.toml             # a plan on the embedded node
  qoslab bench --profile dbench --runtime 5s          # dbench on an unlimited embedded volume
  qoslab bench --profile dbench --target 'nbd+unix:///vol500?socket=/run/qoslab.sock'
  qoslab bench --profile dbench --target /mnt/scratch # a directory: DIR/fiotest, libaio, direct=1
  qoslab bench plan.toml --node http://127.0.0.1:8080 --volume vol500   # a volume on a running node
  qoslab bench plan.toml --client 10.0.0.2,8765 --client 10.0.0.3,8765   # fio client/server
  qoslab bench plan.toml --json > run.json
  qoslab bench --profile ramp --min-iops 1000 --max-iops 10000 --runs 10 --scale 0.05
  qoslab bench examples/seed001-ramp.toml             # three concurrent ramp systems
  qoslab bench --suite network --hosts node1,node2,node3 --rated-mbps 10000
  qoslab bench --suite disks --hosts node1 --devices node1:/dev/sdb,node1:/dev/sdc --iterations 3
  qoslab bench --suite nfs --hosts lg1,lg2 --targets lg1:/mnt/nfs,lg2:/mnt/nfs --target-ram 64GiB

Exit status: 0 all expectations hold; 1 an expectation failed or a fio run failed;
3 none failed but some were inconclusive (a shortfall or latency excess while the load
generator was short of CPU or the host was shared: the measurement, not the target, was
the limit; --strict makes that 1); 2 usage or plan error.

Every job gets a diagnosis (qos-bound, device-bound, node-cpu-bound, client-cpu-bound,
network-bound, noisy-host, unconstrained) from host tool sets sampled every second while
it runs (CPU, run queue, memory, iostat -x, NICs, CPU of fio and the node), and a
steady-state check on its 500 ms windows: docs/DIAGNOSIS.md. Results go to the SQLite database (--db, default $QOSLAB_DB or
./qoslab-results.db): see `qoslab results`. Plan format: docs/BENCH.md.")]
pub struct BenchArgs {
    /// Plan file (TOML). Without one, --profile runs on --target.
    plan: Option<PathBuf>,
    /// Built-in profile to run without a plan (the workload families below that offer one).
    #[arg(long, value_parser = profiles())]
    profile: Option<String>,
    /// A system suite (seed 002) on the hosts of --hosts, reached over ssh: the network mesh,
    /// disks, or fio client/server on NFS/iSCSI/block/dir targets (docs/SUITES.md).
    #[arg(long, value_parser = suite_names(), conflicts_with = "profile")]
    suite: Option<String>,
    /// Let the plan's fio options run programs (exec_prerun, exec_postrun, ioengine=exec,
    /// an external ioengine): refused by default, since a plan is data (docs/BENCH.md).
    #[arg(long)]
    allow_exec: bool,
    /// Where the I/O goes: `embedded` (default: a node started for the run from the plan's
    /// volumes; a NAS volume is reached over NFS), an nbd:// or nbd+unix:// URI, an NFSv3
    /// export nfs://HOST/PATH[?nfsport=P&mountport=P] (fio's nfs engine, libnfs; docs/NFS.md),
    /// or a file, directory or block device (a kernel NFS mount is a directory). The
    /// tenants family takes a directory (a subdirectory per tenant) or block devices
    /// /dev/X,/dev/Y (one per tenant, fio classes only); QoS is then the target's own.
    #[arg(long, conflicts_with = "node")]
    target: Option<String>,
    /// A running qoslab node's REST API (e.g. http://127.0.0.1:8080): the volume named by
    /// --volume is looked up there (its NBD URI and effective limits, which expectations
    /// such as `iops >= policy.ceiling * 0.95` use). The tenants family takes --node alone:
    /// it creates its tenants' volumes (and missing policies) there and deletes them after.
    #[arg(long)]
    node: Option<String>,
    /// The volume on --node to run against.
    #[arg(long, requires = "node")]
    volume: Option<String>,
    /// fio runtime per job, e.g. 5s (default: the plan's, else dbench's 15s); the ramp profile: each
    /// run's length before --scale (default 320s); the provisioned profile: each time-based step
    /// (default 60s x --scale, at least 2s; burst steps run until the credits are out);
    /// --suite network: each iperf3 test (default 10s); the other suites: each fio job (default
    /// the seed's 60s).
    #[arg(long, value_parser = duration)]
    runtime: Option<f64>,
    /// fio ramp time per job, e.g. 2s (default: the plan's, else 2s); --suite network: iperf3's
    /// omitted start (default 1s).
    #[arg(long, value_parser = duration)]
    ramp: Option<f64>,
    /// Shrink a profile's sizes and times together by this factor. ramp: the cycle, the
    /// runtime and the write-cycle limit (default 1: 0.05 turns 80 s cycles into 4 s ones
    /// with a 2.25 s limit); provisioned: the file system's caches and credit buckets, or a
    /// volume model's buckets (default 0.005 on the embedded node, 1 elsewhere).
    #[arg(long, value_name = "FACTOR")]
    scale: Option<f64>,
    /// Remote load generator running `fio --server` (HOST or HOST,PORT); repeatable.
    #[arg(long = "client", value_name = "HOST,PORT")]
    clients: Vec<String>,
    /// Print the stored run as JSON (docs/BENCH.md) instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Results database.
    #[arg(long)]
    db: Option<PathBuf>,
    /// --node: a file holding the API's bearer token (or use -u USER[:PASSWORD]).
    #[arg(long, value_name = "FILE", requires = "node")]
    token_file: Option<PathBuf>,
    /// --node: how to trust and authenticate to the node's HTTPS API.
    #[command(flatten)]
    conn: crate::http_client::ConnArgs,
    /// Do not sample the hosts' tool sets (CPU, disks, NICs, processes) while jobs run;
    /// diagnoses then rest on the node's counters alone.
    #[arg(long)]
    no_tools: bool,
    /// Count inconclusive verdicts as failures (exit 1 instead of 3).
    #[arg(long)]
    strict: bool,
    /// Run each fio job until it is steady (fio stops it once 5 one-second IOPS samples lie
    /// within 10% of their mean), at most MAX (default 60s); each job's stored windows are
    /// then checked by SNIA's rule (docs/DIAGNOSIS.md).
    #[arg(long, value_name = "MAX", num_args = 0..=1, default_missing_value = "60s", value_parser = duration)]
    until_steady: Option<f64>,
    /// Run every job N times (the plan's `iterations`); reports give each job's mean and
    /// spread, and `qoslab compare` judges changes against it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    iterations: Option<u32>,
    #[command(flatten)]
    families: FamilyArgs,
}

/// `--profile`'s values: the registry's families that offer one.
fn profiles() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(workloads::registry().profiles())
}

/// `--suite`'s values: every suite a family offers.
fn suite_names() -> clap::builder::PossibleValuesParser {
    clap::builder::PossibleValuesParser::new(workloads::registry().suites())
}

/// Every family's own options ([`harness::Family::cli`]), kept as parsed for the family.
pub struct FamilyArgs(clap::ArgMatches);

impl clap::FromArgMatches for FamilyArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(FamilyArgs(m.clone()))
    }
    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        self.0 = m.clone();
        Ok(())
    }
}

impl clap::Args for FamilyArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        workloads::registry().cli(cmd)
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        workloads::registry().cli(cmd)
    }
}

/// `qoslab bench --help`'s list of workload families, from the registry, before the
/// examples.
pub(crate) fn with_families_help(cmd: clap::Command) -> clap::Command {
    cmd.mut_subcommand("bench", |b| {
        let after = b
            .get_after_help()
            .map(|s| s.to_string())
            .unwrap_or_default();
        b.after_help(format!("{}\n{after}", workloads::registry().help()))
    })
}

pub(crate) fn duration(s: &str) -> Result<f64, String> {
    parse_duration_str(s)
}

/// The results database path: --db, else $QOSLAB_DB, else ./qoslab-results.db.
pub(crate) fn db_path(db: Option<PathBuf>) -> PathBuf {
    db.or_else(|| std::env::var_os("QOSLAB_DB").map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("qoslab-results.db"))
}

/// Exit with `code` after flushing stdout.
pub(crate) fn exit_with(code: i32) -> ! {
    let _ = std::io::stdout().flush();
    std::process::exit(code)
}

/// The node's REST API through `api-client` (HTTPS with certificate checks, basic or bearer
/// auth; plain `http://` for nodes started with `--insecure-http`).
struct ApiClientNode(api_client::Client);

impl NodeApi for ApiClientNode {
    fn get(&self, path: &str, timeout: std::time::Duration) -> Result<serde_json::Value, String> {
        self.0.get_within(path, timeout).map_err(|e| e.to_string())
    }

    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
        timeout: std::time::Duration,
    ) -> Result<serde_json::Value, String> {
        self.0
            .call_within(method, path, body, Some(timeout))
            .map_err(|e| e.to_string())
    }
}

/// How the harness reaches a running node's REST API (`--node URL`): the one place that
/// picks the client, with the CLI's trust and user options.
pub(crate) fn node_api(
    url: &str,
    conn: &crate::http_client::ConnArgs,
    token_file: &Option<PathBuf>,
) -> anyhow::Result<NodeHandle> {
    let opts = conn.client_options(url, token_file)?;
    let client = api_client::Client::new(&opts).with_context(|| format!("--node {url}"))?;
    Ok(NodeHandle::new(url, Arc::new(ApiClientNode(client))))
}

/// The executor: local fio, or fio's client/server mode when clients are given.
pub(crate) fn executor(
    clients: &[String],
    live: Option<LiveSink>,
) -> anyhow::Result<(Box<dyn Executor>, PathBuf)> {
    let dir = temp_dir("fio").context("creating a directory for job files")?;
    let e: Box<dyn Executor> = if clients.is_empty() {
        let mut fio = RealFio::new(&dir);
        fio.live = live;
        Box::new(fio)
    } else {
        Box::new(RemoteFio::new(&dir, clients.to_vec()))
    };
    Ok((e, dir))
}

/// Run a configured plan on `target` with real fio (or fio's clients), storing it in `db`.
pub(crate) fn run_and_store(
    plan: &mut Plan,
    target: &Target,
    clients: &[String],
    db: &Path,
    ui: &mut TerminalUi,
    tools: bool,
) -> anyhow::Result<Outcome> {
    run_and_store_with(plan, target, clients, db, ui, tools, None)
}

/// [`run_and_store`], also sampling `remote` hosts' tool sets (remote load generators).
pub(crate) fn run_and_store_with(
    plan: &mut Plan,
    target: &Target,
    clients: &[String],
    db: &Path,
    ui: &mut TerminalUi,
    tools: bool,
    remote: Option<harness::recording::RemoteHosts>,
) -> anyhow::Result<Outcome> {
    let mut store = Store::open(db)?;
    let env = Env::detect(fio_version("fio"), env!("CARGO_PKG_VERSION"));
    let (exec, dir) = executor(clients, ui.live_sink())?;
    let r = harness::run(
        plan,
        RunEnv {
            target,
            exec: exec.as_ref(),
            store: &mut store,
            env: &env,
            ui,
            tools,
            remote_tools: remote,
        },
    );
    let _ = std::fs::remove_dir_all(dir);
    Ok(r?)
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    let registry = workloads::registry();
    let matches = &args.families.0;
    let embedded = args.node.is_none() && matches!(args.target.as_deref(), None | Some("embedded"));
    let request = || ProfileRequest {
        embedded,
        plan_file: args.plan.is_some(),
        target: args.target.is_some(),
        node: args.node.is_some(),
        clients: !args.clients.is_empty(),
        runtime: args.runtime,
        ramp: args.ramp,
        scale: args.scale,
        args: Some(matches),
    };
    let mut plan = match (&args.plan, &args.profile) {
        _ if args.suite.is_some() => {
            registry.suite(args.suite.as_deref().unwrap_or_default(), &request())?
        }
        (file, Some(profile)) => {
            let plan = registry.profile(profile, &request())?;
            if file.is_some() {
                anyhow::bail!("give a plan file or --profile, not both");
            }
            plan
        }
        (Some(p), None) => {
            let plan = registry.load(p)?;
            let src = harness::plan::PlanSource::new(&plan.common.text, &plan.common.origin);
            harness::plan::exec::check(&src, args.allow_exec)?;
            plan
        }
        (None, None) => anyhow::bail!(
            "nothing to run: give a plan file, --profile dbench or --suite NAME (see qoslab bench --help)"
        ),
    };
    let target_s = args
        .target
        .clone()
        .or_else(|| plan.common.target.clone())
        .unwrap_or_else(|| "embedded".into());
    let accepts = registry
        .get(plan.family)
        .map(|f| f.accepts())
        .unwrap_or_default();
    let target = match (&args.node, &args.volume) {
        (Some(url), Some(vol)) => {
            if plan.common.node.is_some() {
                anyhow::bail!(
                    "with --node, the plan's [[policy]] and [[volume]] tables would not be applied: \
                     remove them and name an existing volume with --volume"
                );
            }
            harness::target::node_volume(&node_api(url, &args.conn, &args.token_file)?, vol)?
        }
        (Some(url), None) if accepts.node_alone => {
            Target::Node(node_api(url, &args.conn, &args.token_file)?)
        }
        (Some(_), None) => anyhow::bail!(
            "--node needs --volume NAME: the volume on the node to run against (only the tenants \
             family, --profile tenants or a plan with [tenants], takes --node alone: it creates \
             its own volumes)"
        ),
        _ if accepts.devices && Target::names_devices(&target_s) => {
            Target::parse_devices(&target_s)?
        }
        _ => Target::parse(&target_s)?,
    };
    let db = db_path(args.db.clone());
    if let Some(n) = args.iterations {
        plan.common.iterations = n;
    }
    plan.configure(&Options {
        runtime: args.runtime,
        ramp: args.ramp,
        scale: args.scale,
        clients: &args.clients,
        no_step_lines: false,
        until_steady: args.until_steady,
        iterations: args.iterations,
        args: Some(matches),
    })?;
    // --hosts names the suites' hosts, or, with --client, the load generators whose tool
    // sets are sampled over ssh beside this machine's.
    let remote = if accepts.own_hosts {
        None
    } else {
        let r = workloads::remote_tools(matches)?;
        if r.is_some() && args.clients.is_empty() {
            anyhow::bail!(
                "--hosts without --suite names the load generators of --client HOST,PORT to sample \
                 over ssh: give --client too (or --suite NAME)"
            );
        }
        if r.is_some() && args.no_tools {
            anyhow::bail!("--hosts samples the load generators' tool sets: not with --no-tools");
        }
        r
    };
    if !args.json {
        println!("{}", plan.banner(&target, &db));
    }
    let mut ui = TerminalUi::new(args.json);
    let outcome = run_and_store_with(
        &mut plan,
        &target,
        &args.clients,
        &db,
        &mut ui,
        !args.no_tools,
        remote.as_ref().map(|r| r.hosts.clone()),
    )?;
    drop(remote);
    drop(ui);
    let summary = plan.summary(&outcome, &db)?;
    if args.json {
        std::io::stdout().write_all(&workloads::export(&outcome.record, Format::Json))?;
    } else {
        print!("{summary}");
    }
    let code = outcome.exit_code(args.strict);
    if code != 0 {
        exit_with(code);
    }
    Ok(())
}
