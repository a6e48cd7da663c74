//! `qoslab`: one binary for the storage node (serve), its REST clients (policy, volume,
//! stats), and the benchmark harness (bench, results, demo).

mod bench;
mod bench_target;
mod compare_cmd;
mod context;
mod demo;
mod docs_cmd;
mod export_policy_cmd;
mod help;
mod http_client;
mod igroup_cmd;
mod iscsi_cmd;
mod login_cmd;
mod lun_cmd;
mod nfs_cmd;
mod ontap;
mod policy_burst;
mod policy_cmd;
mod report_cmd;
mod results;
mod s3_admin;
mod s3_cmd;
mod serve;
mod serve_detach;
mod serve_ready;
mod serve_safety;
mod serve_start;
mod stats_cmd;
mod tenants_cmd;
mod ui;
mod user_cmd;
mod volume_cmd;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// qoslab — a storage QoS lab: volumes over NBD under ONTAP-style QoS policies.
#[derive(Parser)]
#[command(name = "qoslab", version, about, long_about = None)]
struct Cli {
    /// Log level: error, warn, info, debug, trace (default: info for serve, else warn).
    #[arg(long, global = true)]
    log_level: Option<tracing::Level>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a storage node: serve the configured volumes under their QoS policies, block
    /// volumes over NBD and NAS volumes over NFSv3 (--listen-nfs).
    Serve(serve::ServeArgs),
    /// Benchmark storage: fio plans and the dbench profile, GenIO-style ramps; verdicts, stored results.
    Bench(bench::BenchArgs),
    /// List, show and export stored bench runs.
    Results(results::ResultsArgs),
    /// A stored run as one self-contained HTML page with charts (no network needed).
    Report(report_cmd::ReportArgs),
    /// Compare two stored runs job by job: change in each metric vs its spread, flagged
    /// when it exceeds the noise.
    Compare(compare_cmd::CompareArgs),
    /// Seed 000's QoS scenario on an embedded node: dbench on 7 volumes, one comparison table.
    Demo(demo::DemoArgs),
    /// QoS policy groups on a running node (REST API): create, list, show, modify, delete.
    Policy(policy_cmd::PolicyArgs),
    /// Volumes on a running node (REST API): create, list, show, modify, delete.
    Volume(volume_cmd::VolumeArgs),
    /// NFS export policies on a running node (REST API): which clients may mount a NAS
    /// volume, read-only or read-write.
    ExportPolicy(export_policy_cmd::ExportPolicyArgs),
    /// LUNs on a running node (REST API), served over iSCSI: create, map to igroups, ...
    Lun(lun_cmd::LunArgs),
    /// iSCSI initiator groups on a running node (REST API): who sees which LUNs.
    Igroup(igroup_cmd::IgroupArgs),
    /// Live per-volume IOPS, throughput and latency, busiest first (REST API).
    Stats(stats_cmd::StatsArgs),
    /// S3 users (access keys) and buckets under QoS policies on a running node (REST API).
    S3(s3_admin::S3Args),
    /// The S3 benchmark's driver on a load generator: JSON-line commands on stdin, events
    /// on stdout. Started by `qoslab bench` over ssh; not for interactive use.
    #[command(name = "s3-driver", hide = true)]
    S3Driver,
    /// Tenant file systems over volumes (nbdfuse -> loop -> mkfs -> mount): mount, run a
    /// command, tear down; clean up what a killed run left behind.
    Tenants(tenants_cmd::TenantsArgs),
    /// ONTAP clustershell commands against a node: `qos policy-group ...`, `vol modify ...`
    /// (one command from the words given, or an interactive `::>` prompt).
    Ontap(ontap::OntapArgs),
    /// API users of a node (HTTP basic auth): create, list, delete.
    User(user_cmd::UserArgs),
    /// Save the client context (node URL, its CA, your user) for every client command.
    Login(login_cmd::LoginArgs),
    /// Forget the context `qoslab login` saved.
    Logout,
    /// NFSv3 on its own: serve directories as exports (no QoS; docs/NFS.md).
    Nfs(nfs_cmd::NfsArgs),
    /// iSCSI on its own: serve files as LUNs of one target (no QoS; docs/ISCSI.md).
    Iscsi(iscsi_cmd::IscsiArgs),
    /// Shell completions (bash, zsh, fish, ...) on standard output.
    Completions(docs_cmd::CompletionsArgs),
    /// Man pages for every command, written to a directory.
    Man(docs_cmd::ManArgs),
}

fn main() -> std::process::ExitCode {
    // The one owner of SIGINT/SIGTERM/SIGHUP: what a run registers is torn down in order,
    // then the process exits with 128 + the signal (`serve` stops gracefully instead).
    lifecycle::install();
    let args: Vec<String> = std::env::args().collect();
    if let Some(page) = bench::family_help_request(&args) {
        print!("{}", help::wrap(&page));
        return std::process::ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "bench") && args.iter().any(|a| a == "--help-all") {
        let mut cmd = complete_command();
        let page = cmd
            .find_subcommand_mut("bench")
            .map(|b| b.render_long_help().to_string())
            .unwrap_or_default();
        print!("{}", help::wrap(&page));
        return std::process::ExitCode::SUCCESS;
    }
    let matches = match full_command().try_get_matches() {
        Ok(m) => m,
        Err(e) if !e.use_stderr() => {
            // --help, --version: clap's page, wrapped.
            print!("{}", help::wrap(&e.render().to_string()));
            return std::process::ExitCode::SUCCESS;
        }
        Err(e) => e.exit(),
    };
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    tracing_subscriber::fmt()
        .with_max_level(cli.log_level.unwrap_or(match cli.command {
            Command::Serve(_) => tracing::Level::INFO,
            _ => tracing::Level::WARN,
        }))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    let result = match cli.command {
        Command::Serve(args) => serve::run(args),
        Command::Bench(args) => bench::run(args),
        Command::Results(args) => results::run(args),
        Command::Report(args) => report_cmd::run(args),
        Command::Compare(args) => compare_cmd::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Policy(args) => policy_cmd::run(args),
        Command::Volume(args) => volume_cmd::run(args),
        Command::ExportPolicy(args) => export_policy_cmd::run(args),
        Command::Lun(args) => lun_cmd::run(args),
        Command::Igroup(args) => igroup_cmd::run(args),
        Command::Stats(args) => stats_cmd::run(args),
        Command::S3(args) => s3_admin::run(args),
        Command::S3Driver => s3_driver(),
        Command::Tenants(args) => match tenants_cmd::run(args) {
            Ok(code) => return std::process::ExitCode::from(code.clamp(0, 255) as u8),
            Err(e) => Err(e),
        },
        Command::Ontap(args) => ontap::run(args),
        Command::User(args) => user_cmd::run(args),
        Command::Login(args) => login_cmd::login(args),
        Command::Logout => login_cmd::logout(),
        Command::Nfs(args) => nfs_cmd::run(args),
        Command::Iscsi(args) => iscsi_cmd::run(args),
        Command::Completions(args) => docs_cmd::completions(args, complete_command()),
        Command::Man(args) => docs_cmd::man(args, complete_command()),
    };
    lifecycle::wait_for_teardown();
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("qoslab: error: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

/// A server command's stop: `stop.notified()` resolves on the first SIGINT, SIGTERM or
/// SIGHUP while the guard lives (the command then stops in order and returns; a second
/// signal tears down and exits).
fn graceful_stop() -> (std::sync::Arc<tokio::sync::Notify>, lifecycle::Guard) {
    let stop = std::sync::Arc::new(tokio::sync::Notify::new());
    let notify = stop.clone();
    (stop, lifecycle::graceful(move |_| notify.notify_one()))
}

/// The whole command tree, every option shown: completions, man pages, `bench
/// --help-all`.
fn complete_command() -> clap::Command {
    bench::with_families_help(Cli::command())
}

/// The command tree as `--help` shows it: the commands in groups, bench's common options.
fn full_command() -> clap::Command {
    let cmd = complete_command().mut_subcommand("bench", help::bench_short);
    let template = help::root_template(&cmd);
    cmd.help_template(template)
}

/// `qoslab s3-driver`: serve the coordinator's commands over stdin and stdout.
fn s3_driver() -> anyhow::Result<()> {
    use loadgen::s3::protocol;
    let stdin = std::io::stdin();
    let mut link = protocol::Lines {
        input: stdin.lock(),
        output: std::io::stdout(),
    };
    protocol::serve(&mut link, &protocol::open_http).map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values `cmd`'s argument `id` accepts, in order.
    fn possible_values(cmd: &clap::Command, id: &str) -> Vec<String> {
        cmd.get_arguments()
            .find(|a| a.get_id() == id)
            .unwrap()
            .get_possible_values()
            .iter()
            .map(|v| v.get_name().to_string())
            .collect()
    }

    /// Every family's options fit together (clap checks ids, names and groups), and
    /// `qoslab bench --help` lists the families and `--profile`'s values from the registry.
    #[test]
    fn bench_help_comes_from_the_registry() {
        let mut cmd = complete_command();
        cmd.build();
        cmd.clone().debug_assert();
        let bench = cmd.find_subcommand_mut("bench").unwrap();
        let help = bench.render_long_help().to_string();
        let registry = workloads::registry();
        assert!(help.contains(&registry.help()), "{help}");
        for f in registry.families() {
            assert!(help.contains(f.about()), "{}: {help}", f.name());
        }
        let values = possible_values(bench, "profile");
        assert_eq!(values, registry.profiles());
        assert_eq!(
            values,
            [
                "dbench",
                "isolation",
                "ramp",
                "s3",
                "tenants",
                "provisioned"
            ]
        );
        let values = possible_values(bench, "suite");
        assert_eq!(values, registry.suites());
        assert_eq!(values, ["network", "disks", "nfs", "iscsi", "block", "dir"]);
    }

    /// `qoslab --help` lists every command once, by group; `bench --help` fits a screen;
    /// no help line is wider than help::WIDTH once wrapped.
    #[test]
    fn the_first_screens_are_grouped_and_short() {
        let mut cmd = full_command();
        cmd.build();
        let mut listed: Vec<&str> = help::GROUPS
            .iter()
            .flat_map(|(_, n)| n.iter().copied())
            .collect();
        listed.sort();
        let mut visible: Vec<&str> = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| s.get_name())
            .collect();
        visible.sort();
        assert_eq!(listed, visible);
        let root = help::wrap(&cmd.render_help().to_string());
        assert!(
            root.find("FIRST STEPS:") < root.find("Start here:"),
            "{root}"
        );
        let bench = help::wrap(
            &cmd.find_subcommand_mut("bench")
                .unwrap()
                .render_help()
                .to_string(),
        );
        assert!(bench.lines().count() <= 28, "{bench}");
        for page in [&root, &bench] {
            assert!(
                page.lines().all(|l| l.chars().count() <= help::WIDTH),
                "{page}"
            );
        }
        assert!(
            bench.contains("--help-all") && bench.contains("--dry-run"),
            "{bench}"
        );
        assert!(!bench.contains("--client"), "{bench}");
    }
}
