//! What the plan tests share: a plan run through the harness's run loop on this machine,
//! without tool sets or remote hosts.

use fio::Executor;
use harness::host::Env;
use harness::store::Store;
use harness::target::Target;
use harness::ui::Ui;
use harness::{Options, Outcome, Plan, PlanError, ProfileRequest, RunEnv, RunError};
use workloads::registry;

/// Run `plan` on `target` with `exec` (a fake fio), storing it in `store`.
pub fn run_with(
    plan: &mut Plan,
    target: &Target,
    exec: &dyn Executor,
    store: &mut Store,
    ui: &mut dyn Ui,
) -> Result<Outcome, RunError> {
    harness::run(
        plan,
        RunEnv {
            target,
            exec,
            store,
            env: &Env::default(),
            ui,
            tools: false,
            remote_tools: None,
        },
    )
}

/// The error configuring the plan `text` (valid TOML, parsed as `p.toml`) stops at.
pub fn configure_error(text: &str) -> String {
    let mut p = registry().parse(text, "p.toml").unwrap();
    p.configure(&Options::default()).unwrap_err().0
}

/// A default [`ProfileRequest`] as `set` changes it (what the command line gave, e.g.
/// `|r| r.target = true` for `--target`).
pub fn request(set: impl FnOnce(&mut ProfileRequest<'static>)) -> ProfileRequest<'static> {
    let mut req = ProfileRequest::default();
    set(&mut req);
    req
}

/// The registry's profile `name` asked with [`request`]`(set)`.
pub fn profile_with(
    name: &str,
    set: impl FnOnce(&mut ProfileRequest<'static>),
) -> Result<Plan, PlanError> {
    registry().profile(name, &request(set))
}
