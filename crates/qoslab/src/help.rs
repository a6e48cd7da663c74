//! The help a person reads first: `qoslab --help` with its commands in groups (kubectl's
//! way: start here, the node, benchmarks, results, ONTAP-style administration),
//! `qoslab bench --help` on one screen with the rest behind `--help-all`, and every help
//! page wrapped at [`WIDTH`] columns with hanging indents (clap wraps only with a terminal
//! crate this build does not carry).

/// The widest help line.
pub const WIDTH: usize = 100;

/// The command groups of `qoslab --help`, in order; every visible command is in one.
pub const GROUPS: &[(&str, &[&str])] = &[
    ("Start here", &["demo", "login", "logout"]),
    ("The node", &["serve", "stats", "nfs", "iscsi", "tenants"]),
    ("Benchmarks", &["bench"]),
    ("Results", &["results", "report", "compare"]),
    (
        "ONTAP-style administration (a running node's REST API)",
        &[
            "policy",
            "volume",
            "export-policy",
            "lun",
            "igroup",
            "s3",
            "user",
            "ontap",
        ],
    ),
    ("Other", &["completions", "man", "help"]),
];

/// What to type first, at the top of `qoslab --help`.
const START_HERE: &str = "\
FIRST STEPS:
  qoslab demo                        what qoslab proves, end to end: seed 000's ceilings and seed
                                     001's floors on an embedded node, with reports (~5 min)
  qoslab bench --profile dbench --target /mnt/scratch --dry-run
                                     dbench on your own storage: what it would write, then drop
                                     --dry-run to run it
  qoslab serve --detach              a node in ./qoslab-data; then `qoslab user create`,
                                     `qoslab login`, `qoslab volume create`
";

/// `qoslab --help`'s template: START HERE, then the commands by group.
pub fn root_template(cmd: &clap::Command) -> String {
    let about = |name: &str| {
        cmd.get_subcommands()
            .find(|s| s.get_name() == name)
            .and_then(|s| s.get_about())
            .map(|a| a.to_string())
            .unwrap_or_else(|| "Print this message or the help of the given subcommand(s)".into())
    };
    let width = GROUPS
        .iter()
        .flat_map(|(_, names)| names.iter())
        .map(|n| n.len())
        .max()
        .unwrap_or(0);
    let mut groups = String::new();
    for (title, names) in GROUPS {
        groups.push_str(&format!("{title}:\n"));
        for n in *names {
            groups.push_str(&format!("  {n:width$}  {}\n", about(n)));
        }
        groups.push('\n');
    }
    format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{START_HERE}\n{groups}\
         Options:\n{{options}}\n\n`qoslab COMMAND --help` for a command; `qoslab help bench NAME` for a \
         workload family; README.md and docs/ for the rest."
    )
}

/// Wrap every line of `text` wider than [`WIDTH`] at spaces, continuing under the start of
/// its description (after a run of two spaces past its indent: clap's column), else under
/// its indent.
pub fn wrap(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        if line.chars().count() <= WIDTH {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let hang = line[indent..]
            .find("  ")
            .map(|i| {
                let col = indent + i;
                col + line[col..].len() - line[col..].trim_start().len()
            })
            .filter(|c| *c < WIDTH / 2)
            .unwrap_or(indent);
        let mut cur = " ".repeat(indent);
        let mut fresh = true;
        for word in line[indent..].split(' ') {
            let cur_len = cur.chars().count();
            if !fresh && cur_len > hang && cur_len + 1 + word.chars().count() > WIDTH {
                out.push_str(cur.trim_end());
                out.push('\n');
                cur = " ".repeat(hang);
                fresh = true;
                if word.is_empty() {
                    continue;
                }
            } else if !fresh {
                cur.push(' ');
            }
            cur.push_str(word);
            fresh = false;
        }
        out.push_str(cur.trim_end());
        out.push('\n');
    }
    out
}

/// `qoslab bench`'s options on its one-screen `--help` (every other one: `--help-all`),
/// with a line each.
pub const BENCH_SHORT: &[(&str, &str)] = &[
    ("plan", "Plan file (TOML, docs/BENCH.md); or --profile NAME"),
    ("profile", "A built-in profile (`qoslab help bench NAME`)"),
    (
        "target",
        "Where the I/O goes: embedded (default), an nbd://, nfs:// or iscsi:// URI, a directory, file or block device",
    ),
    ("node", "A running node (default: `qoslab login`'s) ..."),
    ("volume", "... and its volume to run on"),
    ("runtime", "Runtime per job, e.g. 5s (default: the plan's, else 15s)"),
    ("dry_run", "Print the fio jobs and every path they would write; run nothing"),
    ("overwrite", "Write into an existing file, block device or iSCSI LUN (its data is destroyed)"),
    ("create", "Make a --target path that does not exist (a new file, removed after)"),
    ("help_all", "Every option, the workload families and the exit status"),
];

/// The one-screen bench page's footer.
pub const BENCH_SHORT_AFTER: &str = "\
Examples:
  qoslab bench --profile dbench --target /mnt/scratch   # writes DIR/fiotest, removes it after
  qoslab bench plan.toml --node --volume vol500          # a volume of the node you logged in to
Exit status: 0 checks held (or none), 1 a check or job failed, 3 inconclusive, 2 plan error.";

/// The bench page as `--help` shows it: the options of [`BENCH_SHORT`] with their one
/// line, every other one hidden, the short footer.
pub fn bench_short(b: clap::Command) -> clap::Command {
    let ids: Vec<String> = b.get_arguments().map(|a| a.get_id().to_string()).collect();
    let b = ids.iter().fold(b, |b, id| {
        b.mut_arg(id.as_str(), |a| {
            match BENCH_SHORT.iter().find(|(k, _)| k == id) {
                Some((_, help)) => a.help(*help).long_help(None::<&str>),
                None if id == "help" => a,
                None => a.hide(true),
            }
        })
    });
    b.long_about(None::<&str>)
        .after_help(BENCH_SHORT_AFTER)
        .after_long_help(None::<&str>)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_wrap_under_their_description() {
        let line = format!("      --target <TARGET>  {}", "word ".repeat(40));
        let w = wrap(&line);
        assert!(w.lines().all(|l| l.chars().count() <= WIDTH), "{w}");
        assert!(w.starts_with("      --target <TARGET>  word word"), "{w}");
        assert!(
            w.lines().skip(1).all(|l| l.starts_with(&" ".repeat(25))),
            "{w}"
        );
        assert_eq!(wrap("short\n"), "short\n");
        let prose = format!("{}\n", "a ".repeat(80).trim_end());
        assert!(wrap(&prose).lines().count() == 2);
    }
}
