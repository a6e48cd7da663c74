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
  qoslab bench plan.toml                              # a plan on the embedded node (docs/BENCH.md)
  qoslab bench --profile dbench --runtime 5s          # dbench on an unlimited embedded volume
  qoslab bench --profile dbench --target /mnt/scratch # a directory: DIR/fiotest, removed after
  qoslab bench --profile dbench --target /dev/sdx --overwrite   # a device: its data destroyed
  qoslab bench plan.toml --node https://10.0.0.5:8080 # the plan's volumes on a running node
  qoslab bench --profile dbench --node --volume vol500  # a volume on the node of `qoslab login`
  qoslab bench plan.toml --client 10.0.0.2,8765 --client 10.0.0.3,8765   # fio client/server

Exit status: 0 every check held (or there were none: DONE); 1 a check failed or a job
failed; 3 none failed but some were inconclusive (the job's diagnosis explains the miss:
a starved load generator, a shared host; --strict makes that 1); 2 usage or plan error
(nothing runs, nothing is stored).

--node's connection (-u, --cacert, -k, --data-dir, --token-file) works as for every client
command, and falls back on the environment and `qoslab login` (see `qoslab login --help`).
Results go to --db (default $QOSLAB_DB or ./qoslab-results.db): `qoslab results`,
`qoslab report RUN`. Plan format and targets: docs/BENCH.md; diagnoses: docs/DIAGNOSIS.md.")]
pub struct BenchArgs {
    /// Plan file (TOML). Without one, --profile runs on --target.
    plan: Option<PathBuf>,
    /// Built-in profile to run without a plan (`qoslab help bench NAME` for its options).
    #[arg(long, value_parser = profiles())]
    profile: Option<String>,
    /// A system suite (seed 002) on the hosts of --hosts, over ssh (`qoslab help bench suite`).
    #[arg(long, value_parser = suite_names(), conflicts_with = "profile")]
    suite: Option<String>,
    /// Let the plan set any fio option as written, also those that name a path or run a
    /// program (filename, write_iolog, exec_prerun, ioengine=exec, ...). By default a plan
    /// sets only the workload options qoslab knows (docs/BENCH.md): a plan is data.
    #[arg(long)]
    allow_any_fio_option: bool,
    /// Renamed --allow-any-fio-option (it allows every fio option, not only exec).
    #[arg(long, hide = true)]
    allow_exec: bool,
    /// Where the I/O goes: `embedded` (default: a node started for the run from the plan's
    /// volumes; a NAS volume is reached over NFS), an nbd:// or nbd+unix:// URI, an NFSv3
    /// export nfs://HOST/PATH[?nfsport=P&mountport=P] (fio's nfs engine, libnfs; docs/NFS.md),
    /// an iSCSI LUN iscsi://HOST[:PORT]/IQN/LUN (fio's libiscsi engine, initiator
    /// iqn.2026-01.lab.qoslab:bench; a plan that writes needs --overwrite; no CHAP yet),
    /// or a file, directory or block device (a kernel NFS mount is a directory). The
    /// tenants family takes a directory (a subdirectory per tenant) or block devices
    /// /dev/X,/dev/Y (one per tenant: fio on it, applications on a file system made on it);
    /// QoS is then the target's own.
    #[arg(long, conflicts_with = "node")]
    target: Option<String>,
    /// A running qoslab node (its REST API; alone: $QOSLAB_URL or `qoslab login`'s): each
    /// workload's volume is looked up there, the plan's missing policies and volumes are
    /// created there and deleted after; a volume the plan declares a LUN is reached over
    /// the node's iSCSI target (LUN /vol/VOL/bench, made and mapped when missing).
    #[arg(long, value_name = "URL", num_args = 0..=1)]
    node: Option<Option<String>>,
    /// Run on this existing volume of --node (a plan without volumes, or a profile).
    #[arg(long, requires = "node")]
    volume: Option<String>,
    /// Runtime per job, e.g. 5s (default: the plan's, else dbench's 15s; each family's page
    /// says what it times).
    #[arg(long, value_parser = duration)]
    runtime: Option<f64>,
    /// Ramp (warm-up) time per job, e.g. 2s (default: the plan's, else 2s).
    #[arg(long, value_parser = duration)]
    ramp: Option<f64>,
    /// Shrink a profile's sizes and times together (ramp, provisioned: see their pages).
    #[arg(long, value_name = "FACTOR")]
    scale: Option<f64>,
    /// Remote load generator running `fio --server` (HOST or HOST,PORT); repeatable.
    #[arg(long = "client", value_name = "HOST,PORT")]
    clients: Vec<String>,
    /// Print the stored run as JSON instead of the human summary.
    #[arg(long)]
    json: bool,
    /// Results database [default: $QOSLAB_DB, else ./qoslab-results.db].
    #[arg(long)]
    db: Option<PathBuf>,
    /// --node: a file holding the API's bearer token (or use -u USER[:PASSWORD]).
    #[arg(long, value_name = "FILE", requires = "node", hide = true)]
    token_file: Option<PathBuf>,
    /// --node: how to trust and authenticate to the node's HTTPS API.
    #[command(flatten)]
    conn: crate::http_client::ConnArgs,
    /// Do not sample the hosts' tool sets (CPU, disks, NICs) while jobs run.
    #[arg(long)]
    no_tools: bool,
    /// Keep the files the run created on a file or directory target (default: removed at
    /// the end).
    #[arg(long)]
    keep_files: bool,
    /// Write into an existing file, block device or iSCSI LUN given as --target (its data
    /// is destroyed); refused without it.
    #[arg(long)]
    overwrite: bool,
    /// Make a --target path that does not exist (a new file, removed at the end); refused
    /// without it, so a typo never becomes a file.
    #[arg(long)]
    create: bool,
    /// Print the fio jobs and every path the run would write, then stop: nothing runs,
    /// nothing is written or stored.
    #[arg(long)]
    dry_run: bool,
    /// Count inconclusive verdicts as failures (exit 1 instead of 3).
    #[arg(long)]
    strict: bool,
    /// Run each fio job until it is steady (5 one-second IOPS samples within 10% of their
    /// mean), at most MAX (default 60s).
    #[arg(long, value_name = "MAX", num_args = 0..=1, default_missing_value = "60s", value_parser = duration)]
    until_steady: Option<f64>,
    /// Run every job N times: reports give each job's spread, `qoslab compare` judges
    /// changes against it.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    iterations: Option<u32>,
    /// Every option, the workload families and the exit status (`--help` shows the
    /// common ones).
    #[arg(long)]
    help_all: bool,
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

/// The ids of the options `f` adds to `qoslab bench`.
fn family_arg_ids(f: &dyn harness::Family) -> Vec<String> {
    f.cli(clap::Command::new("x"))
        .get_arguments()
        .map(|a| a.get_id().to_string())
        .collect()
}

/// The connection options `bench` shares with every client command (documented there).
const CONNECTION_ARGS: [&str; 4] = ["data_dir", "cacert", "insecure", "user"];

/// `qoslab bench --help`: short. The common options and the list of workload families
/// (from the registry); each family's own options are on its page ([`family_page`]), and
/// the connection options on `qoslab login --help`.
pub(crate) fn with_families_help(cmd: clap::Command) -> clap::Command {
    cmd.mut_subcommand("bench", |b| {
        let after = b
            .get_after_help()
            .map(|s| s.to_string())
            .unwrap_or_default();
        let registry = workloads::registry();
        let mut hidden: Vec<String> = registry
            .families()
            .iter()
            .flat_map(|f| family_arg_ids(*f))
            .collect();
        hidden.extend(CONNECTION_ARGS.iter().map(|s| s.to_string()));
        let b = hidden
            .iter()
            .fold(b, |b, id| b.mut_arg(id.as_str(), |a| a.hide(true)));
        b.after_help(format!(
            "{}  Each family's options: `qoslab help bench NAME`, or --help after --profile NAME.\n\n{after}",
            registry.help()
        ))
    })
}

/// The family `qoslab help bench NAME` or `qoslab bench --profile NAME --help` asks for
/// (a family, profile or suite name).
fn family_named(name: &str) -> Option<&'static dyn harness::Family> {
    let registry = workloads::registry();
    registry.get(name).or_else(|| {
        registry
            .families()
            .iter()
            .copied()
            .find(|f| f.suites().contains(&name))
    })
}

/// One family's help page: what it does, how to run it, and its own options.
pub(crate) fn family_page(name: &str) -> Option<String> {
    let f = family_named(name)?;
    let mut how: Vec<String> = Vec::new();
    if f.offers_profile() {
        how.push(format!("qoslab bench --profile {} [OPTIONS]", f.name()));
    }
    if !f.suites().is_empty() {
        how.push(format!(
            "qoslab bench --suite {} --hosts ... [OPTIONS]",
            f.suites().join("|")
        ));
    }
    if !f.tables().is_empty() {
        how.push(format!(
            "qoslab bench PLAN.toml [OPTIONS]      (a plan with {})",
            f.tables().join(" ")
        ));
    }
    if f.job_set().is_some() {
        how.push(format!("[[workload]] profile = \"{}\" in a plan", f.name()));
    }
    let options = f
        .cli(
            clap::Command::new("qoslab bench")
                .disable_help_flag(true)
                .help_template("{all-args}"),
        )
        .render_help()
        .to_string();
    let options = if options.trim().is_empty() {
        "No options of its own.\n".to_string()
    } else {
        options
    };
    Some(format!(
        "{}: {}\n\nUsage:\n{}\n\n{}\nThe options every family shares (--target, --node, --runtime, --db, ...): \
         qoslab bench --help.\n",
        f.name(),
        f.about(),
        how.iter()
            .map(|h| format!("  {h}"))
            .collect::<Vec<_>>()
            .join("\n"),
        options.trim_end().to_string() + "\n"
    ))
}

/// A help request clap cannot route: `qoslab help bench NAME`, or `qoslab bench ...
/// --profile NAME ... --help` (also `--suite NAME`). The page to print, if it is one.
pub(crate) fn family_help_request(args: &[String]) -> Option<String> {
    let words: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    if let ["help", "bench", name] = words[..] {
        return Some(family_page(name).unwrap_or_else(|| {
            format!(
                "qoslab help bench: no family {name:?}; families: {}\n",
                workloads::registry()
                    .families()
                    .iter()
                    .map(|f| f.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }));
    }
    let bench = words.iter().position(|w| *w == "bench")?;
    let rest = &words[bench + 1..];
    if !rest.iter().any(|w| *w == "--help" || *w == "-h") {
        return None;
    }
    rest.iter().enumerate().find_map(|(i, w)| {
        let name = match *w {
            "--profile" | "--suite" => rest.get(i + 1).copied(),
            w => w
                .strip_prefix("--profile=")
                .or_else(|| w.strip_prefix("--suite=")),
        }?;
        family_page(name)
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
    lifecycle::wait_for_teardown();
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
    url: Option<&str>,
    conn: &crate::http_client::ConnArgs,
    token_file: &Option<PathBuf>,
) -> anyhow::Result<NodeHandle> {
    let opts = conn.client_options(url, token_file)?;
    let client = api_client::Client::new(&opts).with_context(|| format!("--node {}", opts.url))?;
    Ok(NodeHandle::new(&opts.url, Arc::new(ApiClientNode(client))))
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

/// A plan's `[[policy]]`/`[[volume]]` tables on a target that is not a qoslab node: they
/// are not applied there, and the run says so (never dropped silently).
fn setup_not_applied(plan: &Plan, target: &Target) -> Option<String> {
    let node = plan.common.node.as_ref()?;
    if node.volumes.is_empty()
        || matches!(
            target,
            Target::Embedded
                | Target::Node(_)
                | Target::NodeVolume { .. }
                | Target::NodeVolumes { .. }
        )
    {
        return None;
    }
    Some(format!(
        "the plan's {} [[volume]] and {} [[policy]] table(s) are not applied: {} is not a qoslab \
         node, its QoS is its own (every workload runs on it; checks against policy.ceiling or \
         policy.floor cannot be judged)",
        node.volumes.len(),
        node.policies.len(),
        target.short()
    ))
}

/// Have fio parse the plan's job files before anything runs or is stored (a typo is a plan
/// error at the plan's line: exit 2).
fn check_jobs(plan: &Plan, target: &Target, clients: &[String]) -> anyhow::Result<()> {
    let nbd = || {
        vec![
            ("ioengine".to_string(), "nbd".to_string()),
            (
                "uri".to_string(),
                "nbd+unix:///check?socket=/nonexistent".to_string(),
            ),
        ]
    };
    let opts = match target {
        Target::Embedded | Target::Node(_) | Target::NodeVolumes { .. } => nbd(),
        t => t.options(),
    };
    let (exec, dir) = executor(clients, None)?;
    let r = plan.check_jobs(exec.as_ref(), &opts);
    let _ = std::fs::remove_dir_all(dir);
    Ok(r?)
}

/// Run a configured plan on `target` with real fio (or fio's clients), storing it in `db`;
/// with `remote`, also sampling those hosts' tool sets (remote load generators).
pub(crate) fn run_and_store(
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

/// The plan the arguments ask for: a suite's, a profile's or a plan file's.
fn load_plan(
    args: &BenchArgs,
    registry: &harness::family::Registry,
    request: &ProfileRequest,
) -> anyhow::Result<Plan> {
    Ok(match (&args.plan, &args.profile) {
        _ if args.suite.is_some() => {
            registry.suite(args.suite.as_deref().unwrap_or_default(), request)?
        }
        (file, Some(profile)) => {
            let plan = registry.profile(profile, request)?;
            if file.is_some() {
                anyhow::bail!("give a plan file or --profile, not both");
            }
            plan
        }
        (Some(p), None) => registry.load(p, args.allow_any_fio_option)?,
        (None, None) => anyhow::bail!(
            "nothing to run: give a plan file, --profile dbench or --suite NAME (see qoslab bench --help)"
        ),
    })
}

/// The target: a `--node` volume, the node itself, the plan's volumes made there (their
/// setup returned, to undo after), devices, or a URI or path. None: a dry run was printed.
fn resolve_target(
    args: &BenchArgs,
    plan: &Plan,
    accepts: harness::family::Accepts,
    target_s: &str,
    db: &Path,
) -> anyhow::Result<Option<(Target, Option<workloads::node_setup::NodeSetup>)>> {
    let mut setup: Option<workloads::node_setup::NodeSetup> = None;
    let target = match (&args.node, &args.volume) {
        (Some(url), Some(vol)) => {
            if plan.common.node.is_some() {
                anyhow::bail!(
                    "--volume {vol}: the plan declares its own [[policy]]/[[volume]] tables; drop \
                     --volume and --node runs the plan's volumes there (creating the missing ones)"
                );
            }
            harness::target::node_volume(
                &node_api(url.as_deref(), &args.conn, &args.token_file)?,
                vol,
            )?
        }
        (Some(url), None) if accepts.node_alone => {
            Target::Node(node_api(url.as_deref(), &args.conn, &args.token_file)?)
        }
        (Some(url), None) if args.dry_run => {
            let wanted = plan.body.volumes_used();
            let written = &plan.common.iscsi;
            written.check_on_node(&wanted)?;
            let mut luns: Vec<String> = wanted
                .iter()
                .filter(|w| {
                    plan.common
                        .node
                        .as_ref()
                        .is_some_and(|n| n.iscsi.luns.iter().any(|l| &l.volume == *w))
                })
                .map(|w| {
                    format!(
                        "; {w} over the node's iSCSI target: its LUN {} (made and mapped to \
                         {} when missing{})",
                        workloads::node_setup::lun::lun_path(w),
                        harness::iscsi::INITIATOR,
                        written.dry_run_note(w)
                    )
                })
                .collect();
            if !luns.is_empty() {
                luns.push(written.dry_run_target_note());
            }
            let on = format!(
                "node {} (volumes {}; the plan's missing policies and volumes made there when \
                 the run starts, deleted after{})",
                url.as_deref().unwrap_or("of `qoslab login`"),
                wanted.join(", "),
                luns.concat()
            );
            print!(
                "{}",
                crate::bench_target::dry_run(
                    plan,
                    crate::bench_target::DryTarget::Described(on),
                    &plan
                        .body
                        .own_files()
                        .into_iter()
                        .map(harness::target_files::Place::Local)
                        .collect::<Vec<_>>(),
                    db
                )
            );
            return Ok(None);
        }
        (Some(url), None) => {
            let wanted = plan.body.volumes_used();
            if wanted.is_empty() {
                anyhow::bail!(
                    "--node needs --volume NAME here: this {} names no volume of its own (a plan's \
                     workloads name theirs with `volume = NAME`)",
                    if args.plan.is_some() { "plan" } else { "profile" }
                );
            }
            let api = node_api(url.as_deref(), &args.conn, &args.token_file)?;
            let s = workloads::node_setup::NodeSetup::apply(
                &api,
                plan.common.node.as_ref(),
                &plan.common.iscsi,
                &wanted,
            )
            .map_err(anyhow::Error::msg)?;
            let t = s.target();
            setup = Some(s);
            t
        }
        _ if accepts.devices && Target::names_devices(target_s) => Target::parse_devices(target_s)?,
        _ => Target::parse(target_s)?,
    };
    Ok(Some((target, setup)))
}

/// --hosts names the suites' hosts, or, with --client, the load generators whose tool
/// sets are sampled over ssh beside this machine's.
fn remote_tools(
    args: &BenchArgs,
    accepts: harness::family::Accepts,
) -> anyhow::Result<Option<workloads::suite::RemoteTools>> {
    Ok(if accepts.own_hosts {
        None
    } else {
        let r = workloads::remote_tools(&args.families.0)?;
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
    })
}

/// What the plan may do to its target, as the arguments allow.
fn allow(args: &BenchArgs) -> crate::bench_target::Allow {
    crate::bench_target::Allow {
        overwrite: args.overwrite,
        create: args.create,
    }
}

/// The arguments' settings on the plan (runtime, ramp, scale, clients, iterations, ...).
fn configure(args: &BenchArgs, plan: &mut Plan) -> anyhow::Result<()> {
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
        args: Some(&args.families.0),
        allow: allow(args),
    })?;
    Ok(())
}

/// After a run (not `--json`): the files it wrote, the setup notes, what was undone on the
/// node, and the summary.
fn print_after(
    written: &[String],
    not_applied: Option<&str>,
    undone: Option<&(Vec<String>, Vec<String>)>,
    summary: &str,
) {
    for w in written {
        println!("{w}");
    }
    if let Some(n) = not_applied {
        println!("note: {n}");
    }
    if let Some((problems, gone)) = undone {
        if !gone.is_empty() {
            println!(
                "deleted what the run created on the node: {}",
                gone.join(", ")
            );
        }
        for p in problems {
            println!("note: {p}");
        }
    }
    print!("{summary}");
}

pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if args.allow_exec {
        anyhow::bail!(
            "--allow-exec is now --allow-any-fio-option: it lets a plan set any fio option, \
             also those that name a path or run a program"
        );
    }
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
    let mut plan = load_plan(&args, registry, &request())?;
    let target_s = args
        .target
        .clone()
        .or_else(|| plan.common.target.clone())
        .unwrap_or_else(|| "embedded".into());
    let accepts = registry
        .get(plan.family)
        .map(|f| f.accepts())
        .unwrap_or_default();
    let db = db_path(args.db.clone());
    configure(&args, &mut plan)?;
    let Some((target, setup)) = resolve_target(&args, &plan, accepts, &target_s, &db)? else {
        return Ok(());
    };
    check_jobs(&plan, &target, &args.clients)?;
    let remote = remote_tools(&args, accepts)?;
    crate::bench_target::admit(&target, accepts, &plan, allow(&args))?;
    let written = crate::bench_target::written_places(&target, accepts, &plan);
    if args.dry_run {
        print!(
            "{}",
            crate::bench_target::dry_run(
                &plan,
                crate::bench_target::DryTarget::Resolved(&target),
                &written,
                &db
            )
        );
        return Ok(());
    }
    let not_applied = setup_not_applied(&plan, &target);
    if !args.json {
        println!("{}", plan.banner(&target, &db));
        if let Some(n) = &not_applied {
            println!("note: {n}");
        }
        for n in setup.iter().flat_map(|s| &s.notes) {
            println!("note: {n}");
        }
    }
    let files = harness::target_files::WrittenFiles::track_places(written);
    let mut ui = TerminalUi::new(args.json);
    let outcome = run_and_store(
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
    let written = files.finish(args.keep_files);
    let undone = setup.map(|s| s.close());
    let summary = plan.summary(&outcome, &db)?;
    if args.json {
        std::io::stdout().write_all(&workloads::export(&outcome.record, Format::Json))?;
    } else {
        print_after(&written, not_applied.as_deref(), undone.as_ref(), &summary);
    }
    let code = outcome.exit_code(args.strict);
    if code != 0 {
        exit_with(code);
    }
    Ok(())
}
