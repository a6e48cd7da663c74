//! `qoslab user create|list|delete`: the API users of a node (HTTP basic auth), kept in
//! DATA_DIR/users.json with Argon2id password hashes. A running node notices changes at
//! its next request.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use control_plane::api::users;

#[derive(Args)]
#[command(after_help = "\
Once a node has a user, every API request needs credentials (curl -u USER:PASSWORD, or
`qoslab ... --user USER`). Passwords are stored as salted Argon2id hashes, never in clear.

EXAMPLES:
  qoslab user create admin --data-dir qoslab-data          # asks for the password twice
  printf 'Netapp1!\\n' | qoslab user create admin --password-stdin
  qoslab user list
  qoslab user delete admin")]
pub struct UserArgs {
    /// The node's data directory (default ./qoslab-data, as `qoslab serve`).
    #[arg(long, global = true, default_value = "qoslab-data")]
    data_dir: PathBuf,
    #[command(subcommand)]
    cmd: UserCmd,
}

#[derive(Subcommand)]
enum UserCmd {
    /// Create a user (the password is asked for, or read from stdin).
    Create {
        name: String,
        /// Read the password from the first line of standard input.
        #[arg(long)]
        password_stdin: bool,
        /// Replace the password of an existing user.
        #[arg(long)]
        replace: bool,
    },
    /// List the users (names only).
    List,
    /// Delete a user. Deleting the last user of a running node is refused unless
    /// --force: its API then refuses every request needing credentials (it never
    /// opens while it runs) until a user is created again.
    Delete {
        name: String,
        /// Delete the last user even though a node is running on the data directory.
        #[arg(long)]
        force: bool,
    },
}

/// Read a line from the terminal without echoing it.
pub fn read_password(prompt: &str) -> anyhow::Result<String> {
    let fd = libc::STDIN_FILENO;
    // SAFETY: tcgetattr/tcsetattr on stdin with a zero-initialised termios we own.
    let mut old: libc::termios = unsafe { std::mem::zeroed() };
    let is_tty = unsafe { libc::tcgetattr(fd, &mut old) } == 0;
    if is_tty {
        let mut quiet = old;
        quiet.c_lflag &= !libc::ECHO;
        quiet.c_lflag |= libc::ECHONL;
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, &quiet) };
    }
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let r = std::io::stdin().lock().read_line(&mut line);
    if is_tty {
        unsafe { libc::tcsetattr(fd, libc::TCSANOW, &old) };
    }
    r.context("reading the password")?;
    Ok(line.trim_end_matches(['\r', '\n']).to_string())
}

pub fn run(args: UserArgs) -> anyhow::Result<()> {
    match args.cmd {
        UserCmd::Create {
            name,
            password_stdin,
            replace,
        } => {
            let password = if password_stdin {
                let mut line = String::new();
                std::io::stdin()
                    .lock()
                    .read_line(&mut line)
                    .context("reading the password from stdin")?;
                line.trim_end_matches(['\r', '\n']).to_string()
            } else if std::io::stdin().is_terminal() {
                let a = read_password(&format!("New password for {name}: "))?;
                let b = read_password("Again: ")?;
                if a != b {
                    bail!("the passwords differ; nothing was changed");
                }
                a
            } else {
                bail!("give --password-stdin to read the password from a pipe");
            };
            users::create(&args.data_dir, &name, &password, replace)?;
            println!(
                "{} user {name} in {}",
                if replace { "set" } else { "created" },
                users::users_file(&args.data_dir).display()
            );
        }
        UserCmd::List => {
            for u in users::load(&args.data_dir)? {
                println!("{}", u.name);
            }
        }
        UserCmd::Delete { name, force } => {
            let all = users::load(&args.data_dir)?;
            let last = all.len() == 1 && all[0].name == name;
            if let (true, false, Some(pid)) = (
                last,
                force,
                control_plane::datadir::running_node(&args.data_dir),
            ) {
                bail!(
                    "refusing to delete {name}, the last API user of the node running on {} \
                     (pid {pid}): its API would refuse every request needing credentials \
                     until a user is created again (it never opens while it runs); create \
                     another user first, or give --force",
                    args.data_dir.display()
                );
            }
            users::delete(&args.data_dir, &name)?;
            println!("deleted user {name}");
        }
    }
    Ok(())
}
