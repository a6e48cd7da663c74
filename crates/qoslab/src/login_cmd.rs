//! `qoslab login` / `qoslab logout`: save the client context once (the node's URL, how to
//! trust its certificate, who you are) so every client command finds it (crate::context).

use anyhow::Context;
use clap::Args;

use crate::http_client::ConnArgs;

#[derive(Args)]
#[command(after_help = "\
Every client command (policy, volume, stats, ontap, s3, bench --node) then uses the saved
context for that node. Flags and the environment still win: QOSLAB_URL, QOSLAB_DATA_DIR,
QOSLAB_USER (USER or USER:PASSWORD), QOSLAB_PASSWORD, QOSLAB_TOKEN_FILE. The context is
$XDG_CONFIG_HOME/qoslab/context.json (else ~/.config/qoslab/context.json, or
$QOSLAB_CONTEXT), readable by you only (0600); it holds the password as given, like
~/.netrc or ~/.aws/credentials.

EXAMPLES:
  qoslab login -u admin                                   # the local node; asks for the password
  qoslab login --url https://10.0.0.5:8080 --cacert ca.pem -u admin:Netapp1!
  qoslab logout")]
pub struct LoginArgs {
    /// The node's REST API [default: $QOSLAB_URL, else https://127.0.0.1:8080].
    #[arg(long)]
    url: Option<String>,
    /// File holding the bearer token (the node's --api-token-file).
    #[arg(long, value_name = "PATH")]
    token_file: Option<std::path::PathBuf>,
    #[command(flatten)]
    conn: ConnArgs,
}

pub fn login(args: LoginArgs) -> anyhow::Result<()> {
    // Start from nothing saved: the context being written is this one.
    let r = crate::context::resolve(
        &crate::context::Flags {
            url: args.url.as_deref(),
            data_dir: args.conn.data_dir.as_deref(),
            cacert: args.conn.cacert.as_deref(),
            insecure: args.conn.insecure,
            user: args.conn.user.as_deref(),
            token_file: args.token_file.as_deref(),
        },
        None,
    );
    let opts =
        r.options(&|user| crate::user_cmd::read_password(&format!("Password for {user}: ")))?;
    let password = match &opts.auth {
        api_client::Auth::Basic { password, .. } => Some(password.clone()),
        _ => None,
    };
    // Prove the context works before saving it.
    let client = api_client::Client::new(&opts)?;
    let cluster = client
        .get("/api/cluster")
        .with_context(|| format!("logging in to {}", opts.url))?;
    let path = crate::context::save(&r.to_saved(password))?;
    println!(
        "logged in to {} ({}){}; saved in {} (readable by you only)",
        opts.url,
        cluster["name"].as_str().unwrap_or("qoslab"),
        r.user
            .as_ref()
            .map(|(u, _)| format!(" as {u}"))
            .unwrap_or_default(),
        path.display()
    );
    Ok(())
}

pub fn logout() -> anyhow::Result<()> {
    match crate::context::forget()? {
        Some(p) => println!("removed the saved context {}", p.display()),
        None => println!("no saved context"),
    }
    Ok(())
}
