//! `qoslab completions SHELL` and `qoslab man DIR`: shell completions (clap_complete) and
//! man pages (clap_mangen) generated from the same command tree `--help` shows, so they
//! never drift from the binary. `scripts/gen-docs.sh` writes both for packaging.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::Args;

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab completions bash > /etc/bash_completion.d/qoslab
  qoslab completions zsh > ~/.zfunc/_qoslab
  qoslab completions fish > ~/.config/fish/completions/qoslab.fish")]
pub struct CompletionsArgs {
    /// The shell: bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

#[derive(Args)]
#[command(after_help = "\
EXAMPLES:
  qoslab man /usr/local/share/man/man1 && man qoslab-bench")]
pub struct ManArgs {
    /// Directory for the pages: qoslab.1 and qoslab-COMMAND.1 for every command.
    dir: PathBuf,
}

pub fn completions(args: CompletionsArgs, mut cmd: clap::Command) -> anyhow::Result<()> {
    use std::io::Write;
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "qoslab", &mut buf);
    // A closed pipe (`| head`) is the reader's choice, not an error.
    let _ = std::io::stdout().write_all(&buf);
    Ok(())
}

pub fn man(args: ManArgs, cmd: clap::Command) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating {}", args.dir.display()))?;
    let n = write_pages(&cmd, "qoslab", &args.dir)?;
    println!("wrote {n} man pages to {}", args.dir.display());
    Ok(())
}

/// `cmd`'s page as NAME.1 and its visible subcommands' as NAME-SUB.1; how many.
fn write_pages(cmd: &clap::Command, name: &str, dir: &Path) -> anyhow::Result<usize> {
    // clap names commands with &'static str (without its `string` feature): one page each,
    // once per process.
    let static_name: &'static str = Box::leak(name.to_string().into_boxed_str());
    let cmd = cmd.clone().name(static_name);
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone()).render(&mut buf)?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, buf).with_context(|| format!("writing {}", path.display()))?;
    let mut n = 1;
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        n += write_pages(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(n)
}
