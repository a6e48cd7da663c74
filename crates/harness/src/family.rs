//! The workload-family seam.
//!
//! A [`Family`] owns some top-level plan tables (`[[workload]]`; `[ramp]` and `[[system]]`),
//! may offer a `--profile NAME` that builds a plan without a file, may add command-line
//! options, and parses its tables into a [`FamilyPlan`]: the plan's work, which the harness
//! runs step by step ([`crate::run::run`]). The [`Registry`] holds every family in one
//! place (`workloads::registry`): the plan parser dispatches tables through it, `--profile`
//! names and `qoslab bench --help` come from it.
//!
//! A family never touches the run loop, the store's schema or the CLI's wiring; the harness
//! never names a family.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use fio::JobResult;

use crate::context::{Prepare, RunContext, RunError, RunHeader, Step};
use crate::outcome::Outcome;
use crate::plan::{parse_common, Common, PlanError, PlanSource};
use crate::target::Target;

/// A workload family. Implementations are unit structs registered once.
pub trait Family: Send + Sync {
    /// The family's name: `--profile NAME`, `[[workload]] profile = NAME` for a job set.
    fn name(&self) -> &'static str;

    /// One line for `qoslab bench --help`.
    fn about(&self) -> &'static str;

    /// The top-level plan tables it owns, written as in TOML (`"[[workload]]"`, `"[ramp]"`).
    fn tables(&self) -> &'static [&'static str] {
        &[]
    }

    /// How a plan asks for this family's work, in "a plan needs ..." messages
    /// (`"[[system]]s for the ramp profile"`).
    fn plan_hint(&self, _registry: &Registry) -> String {
        format!(
            "{} for the {} family",
            self.tables().join(", "),
            self.name()
        )
    }

    /// What its tables run, in "a plan runs A or B, not both" messages
    /// (`"[[system]]s (the ramp profile)"`).
    fn plan_noun(&self) -> String {
        format!("{} (the {} family)", self.tables().join(", "), self.name())
    }

    /// Parse this family's tables of a plan whose common part is `common`. Read them from
    /// `src` ([`PlanSource::deserialize`]) so errors carry the plan's line numbers; validate
    /// everything here, once.
    fn parse(
        &self,
        src: &PlanSource,
        _common: &Common,
        _registry: &Registry,
    ) -> Result<Box<dyn FamilyPlan>, PlanError> {
        Err(PlanError(format!(
            "{}: the {} family takes no plan tables",
            src.origin,
            self.name()
        )))
    }

    /// Whether `qoslab bench --profile NAME` runs this family without a plan file.
    fn offers_profile(&self) -> bool {
        false
    }

    /// The plan `--profile NAME` runs.
    fn profile(&self, _req: &ProfileRequest, _registry: &Registry) -> Result<Plan, PlanError> {
        Err(PlanError(format!(
            "--profile {}: no such profile",
            self.name()
        )))
    }

    /// The `--suite NAME`s this family runs: system suites over hosts (seed 002's network
    /// mesh, disks, storage through fio client/server), each built from the command line
    /// like a profile.
    fn suites(&self) -> &'static [&'static str] {
        &[]
    }

    /// The plan `--suite NAME` runs (`name` is one of [`Family::suites`]).
    fn suite(
        &self,
        name: &str,
        _req: &ProfileRequest,
        _registry: &Registry,
    ) -> Result<Plan, PlanError> {
        Err(PlanError(format!("--suite {name}: no such suite")))
    }

    /// Command-line options of this family, added to `qoslab bench` (under their own help
    /// heading); read back from [`Options::args`] / [`ProfileRequest::args`].
    fn cli(&self, cmd: clap::Command) -> clap::Command {
        cmd
    }

    /// A set of fio jobs that `[[workload]] profile = NAME` runs (dbench's nine).
    fn job_set(&self) -> Option<&dyn JobSet> {
        None
    }

    /// The targets and common options its plans accept beyond the ordinary ones (the CLI
    /// asks, and never names a family).
    fn accepts(&self) -> Accepts {
        Accepts::default()
    }
}

/// What a family's plans accept beyond an NBD URI, a path, the embedded node or a `--node`
/// volume ([`Family::accepts`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Accepts {
    /// `--node URL` without `--volume`: the family creates its own volumes there.
    pub node_alone: bool,
    /// `--target /dev/X,/dev/Y`: a list of block devices.
    pub devices: bool,
    /// The family reads `--hosts` itself (the suites' hosts), so it does not name the
    /// `--client` load generators whose tool sets are sampled.
    pub own_hosts: bool,
    /// A directory target is the family's to lay out (it makes a fresh directory of its
    /// own there): the harness's `DIR/fiotest` rules do not apply.
    pub own_directory: bool,
    /// The file the family writes in a directory target, when not fio's `fiotest`.
    pub dir_file: Option<&'static str>,
}

/// A named set of fio jobs, run by the generic `[[workload]]` family.
pub trait JobSet: Send + Sync {
    /// The jobs in run order: fio job name and options (target and time options excluded).
    fn jobs(&self) -> Vec<(String, Vec<(String, String)>)>;

    /// Printed once the last job of one workload's set has run (one iteration), from the
    /// jobs' results by name: dbench's summary block.
    fn summary(&self, results: &BTreeMap<String, JobResult>) -> String;
}

/// Any type, as [`std::any::Any`] (so a caller that knows a plan's family can reach its
/// concrete plan: [`Plan::body_as`]). Implemented for every type.
pub trait AsAny {
    fn as_any(&self) -> &dyn std::any::Any;
}

impl<T: std::any::Any> AsAny for T {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

/// A family's parsed plan: its steps and how each runs. Validated by the time it exists;
/// [`FamilyPlan::configure`] applies the command line and validates once more.
pub trait FamilyPlan: AsAny + std::fmt::Debug + Send {
    /// Apply the command line (`--runtime`, `--ramp`, `--client`, the family's own options)
    /// and validate, before anything runs.
    fn configure(&mut self, common: &mut Common, opts: &Options) -> Result<(), PlanError>;

    /// The line printed before the run starts (not with `--json`).
    fn banner(&self, common: &Common, target: &Target, db: &Path) -> String;

    /// Whether the harness draws its progress line for each step (a family that prints
    /// its own line as each step runs says no).
    fn progress_line(&self) -> bool {
        true
    }

    /// Before the run row exists: check the target, start or open what the family needs.
    /// Returns what the run row records.
    fn prepare(&mut self, ctx: &mut Prepare) -> Result<RunHeader, RunError>;

    /// The steps, in order.
    fn steps(&self) -> Vec<Step>;

    /// Run step `index`, recording its jobs, series and tables as it goes.
    fn run_step(&mut self, index: usize, ctx: &mut RunContext) -> Result<(), RunError>;

    /// After the last step: record the run-level verdicts it judges (on a job of its
    /// choice, through `ctx`), its last tables, and release what it holds. The run's status
    /// is not the family's to say: the harness derives it from the stored records
    /// ([`crate::outcome`]).
    fn finish(&mut self, _ctx: &mut RunContext) -> Result<(), RunError> {
        Ok(())
    }

    /// Keep only the work on the embedded node's `volumes` (a re-run of the volumes whose
    /// measurements the machine discredited: [`crate::outcome::discredited_volumes`]).
    fn retain_volumes(&mut self, _common: &Common, _volumes: &[String]) -> Result<(), PlanError> {
        Err(PlanError(
            "this family's plans cannot be narrowed to some volumes".into(),
        ))
    }

    /// The family's part of the terminal summary (its tables), printed before the
    /// harness's status lines ([`Plan::summary`]; not with `--json`). An error here is an
    /// output the family promised and could not write (the run is stored).
    fn summary(&self, _outcome: &Outcome) -> Result<String, RunError> {
        Ok(String::new())
    }

    /// The volumes the plan's work runs on, by name (a `--node` run looks each up there;
    /// empty: the family runs on one volume or makes its own).
    fn volumes_used(&self) -> Vec<String> {
        Vec::new()
    }

    /// The fio job files the plan's user wrote options for, each with the plan location
    /// that wrote them (`plan.toml:12: workload "w"`), without target or time options:
    /// [`Plan::check_jobs`] has fio parse them before anything runs.
    fn job_files(&self) -> Vec<(String, fio::JobFile)> {
        Vec::new()
    }

    /// Every fio job the plan runs on the target (one iteration), each with where the plan
    /// asks for it (`plan.toml:7: workload "w"`) and its job file without the target's
    /// options: what `--dry-run` prints and what the free-space check of a file target
    /// sizes. Empty: the family lays out its target itself.
    fn fio_jobs(&self) -> Vec<crate::fio_job::PlannedJob> {
        Vec::new()
    }

    /// Files on this machine the plan names itself that the run writes (a ramp's
    /// systems' own targets), admitted by `configure` under `--overwrite`/`--create`:
    /// tracked, listed and removed like the target's file.
    fn own_files(&self) -> Vec<PathBuf> {
        Vec::new()
    }
}

/// A plan: the common part and one family's work.
pub struct Plan {
    pub common: Common,
    /// The family whose tables it holds.
    pub family: &'static str,
    pub body: Box<dyn FamilyPlan>,
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("common", &self.common)
            .field("family", &self.family)
            .field("body", &self.body)
            .finish()
    }
}

impl Plan {
    /// Apply the command line and validate (see [`FamilyPlan::configure`]).
    pub fn configure(&mut self, opts: &Options) -> Result<(), PlanError> {
        self.body.configure(&mut self.common, opts)
    }

    pub fn banner(&self, target: &Target, db: &Path) -> String {
        self.body.banner(&self.common, target, db)
    }

    pub fn steps(&self) -> Vec<Step> {
        self.body.steps()
    }

    /// Have fio parse every job file the plan's user wrote options for
    /// ([`FamilyPlan::job_files`], with the target's options `target_opts`) before
    /// anything runs or is stored: a typo (`rw = "randred"`, `iodeth = 16`) is a plan
    /// error at the plan's line, in fio's own words.
    pub fn check_jobs(
        &self,
        exec: &dyn fio::Executor,
        target_opts: &[(String, String)],
    ) -> Result<(), PlanError> {
        for (at, mut file) in self.body.job_files() {
            for (k, v) in target_opts {
                file.global.set(k, v.clone());
            }
            if let Err(complaint) = exec.parse_only(&file) {
                return Err(PlanError(format!("{at}: fio rejects the job: {complaint}")));
            }
        }
        Ok(())
    }

    /// Keep only the work on `volumes` ([`FamilyPlan::retain_volumes`]).
    pub fn retain_volumes(&mut self, volumes: &[String]) -> Result<(), PlanError> {
        self.body.retain_volumes(&self.common, volumes)
    }

    /// The terminal summary: the family's part, then the harness's status line, problems
    /// and where the run is stored ([`crate::outcome::summary`]).
    pub fn summary(&self, outcome: &Outcome, db: &Path) -> Result<String, RunError> {
        let own = self.body.summary(outcome)?;
        let sep = if own.is_empty() { "\n" } else { "" };
        Ok(format!(
            "{own}{sep}{}",
            crate::outcome::summary(&outcome.record, db)
        ))
    }

    /// The family's own plan, when it is a `T`.
    pub fn body_as<T: 'static>(&self) -> Option<&T> {
        // Through the trait object, not the Box (which is `Any` itself).
        let body: &dyn FamilyPlan = self.body.as_ref();
        body.as_any().downcast_ref::<T>()
    }
}

/// The command line as a plan sees it.
#[derive(Default)]
pub struct Options<'a> {
    /// `--runtime`, `--ramp`.
    pub runtime: Option<f64>,
    pub ramp: Option<f64>,
    /// `--scale`: shrink the family's sizes and times together (each family says what).
    pub scale: Option<f64>,
    /// `--client HOST,PORT` (fio's client/server mode).
    pub clients: &'a [String],
    /// Leave out the line per finished step (`qoslab demo` prints its own table instead).
    pub no_step_lines: bool,
    /// `--until-steady MAX`: run each fio job until it is steady (fio's `steadystate`), at
    /// most MAX seconds.
    pub until_steady: Option<f64>,
    /// `--iterations N` (the CLI has set [`Common::iterations`] from it already; a family
    /// with a default of its own reads it here).
    pub iterations: Option<u32>,
    /// The parsed command line, for the family's own options ([`Family::cli`]); None
    /// outside the CLI.
    pub args: Option<&'a clap::ArgMatches>,
    /// `--overwrite`, `--create`: what a family may do to paths of its own plan's (the
    /// ramp's systems' targets; `--target` itself is the CLI's to check).
    pub allow: crate::target_files::Allow,
}

/// What `--profile NAME` is given.
#[derive(Default)]
pub struct ProfileRequest<'a> {
    /// The target is the embedded node (no `--target` but `embedded`, no `--node`).
    pub embedded: bool,
    /// Given on the command line too (a family that builds its own node refuses them).
    pub plan_file: bool,
    pub target: bool,
    pub node: bool,
    pub clients: bool,
    pub runtime: Option<f64>,
    pub ramp: Option<f64>,
    /// `--scale`.
    pub scale: Option<f64>,
    pub args: Option<&'a clap::ArgMatches>,
}

impl ProfileRequest<'_> {
    /// The volume a profile's plan declares for its load: on the embedded node an
    /// unlimited 100 GB volume named "bench" (a `[[volume]]` table to put first), on any
    /// other target nothing.
    pub fn bench_volume(&self) -> &'static str {
        if self.embedded {
            "[[volume]]\nname = \"bench\"\nsize = \"100GB\"\n\n"
        } else {
            ""
        }
    }
}

/// Every family, in one place and one order (the order of `--help` and of messages).
pub struct Registry {
    families: Vec<&'static dyn Family>,
}

impl Registry {
    /// The registry of `families`. Names and tables must be unique (checked: a
    /// registration mistake is a programming error).
    pub fn new(families: Vec<&'static dyn Family>) -> Registry {
        let mut names = std::collections::BTreeSet::new();
        let mut tables = std::collections::BTreeSet::new();
        let mut suites = std::collections::BTreeSet::new();
        for f in &families {
            assert!(
                names.insert(f.name()),
                "family {} registered twice",
                f.name()
            );
            for s in f.suites() {
                assert!(suites.insert(*s), "suite {s} offered twice");
            }
            for t in f.tables() {
                assert!(tables.insert(table_key(t)), "plan table {t} owned twice");
            }
        }
        Registry { families }
    }

    pub fn families(&self) -> &[&'static dyn Family] {
        &self.families
    }

    pub fn get(&self, name: &str) -> Option<&'static dyn Family> {
        self.families.iter().copied().find(|f| f.name() == name)
    }

    /// Names `--profile` accepts.
    pub fn profiles(&self) -> Vec<&'static str> {
        self.families
            .iter()
            .filter(|f| f.offers_profile())
            .map(|f| f.name())
            .collect()
    }

    /// Names `--suite` accepts, in registry order.
    pub fn suites(&self) -> Vec<&'static str> {
        self.families
            .iter()
            .flat_map(|f| f.suites().iter().copied())
            .collect()
    }

    /// The plan `--suite NAME` runs.
    pub fn suite(&self, name: &str, req: &ProfileRequest) -> Result<Plan, PlanError> {
        match self.families.iter().find(|f| f.suites().contains(&name)) {
            Some(f) => f.suite(name, req, self),
            None => Err(PlanError(format!(
                "--suite {name:?}: allowed suites: {}",
                self.suites().join(", ")
            ))),
        }
    }

    /// Names `[[workload]] profile = NAME` accepts.
    pub fn job_set_names(&self) -> Vec<&'static str> {
        self.families
            .iter()
            .filter(|f| f.job_set().is_some())
            .map(|f| f.name())
            .collect()
    }

    pub fn job_set(&self, name: &str) -> Option<&'static dyn JobSet> {
        self.get(name).and_then(|f| f.job_set())
    }

    /// Read and parse a plan file; `any_fio_option`: its fio options may be any fio option
    /// (`--allow-any-fio-option`; by default only the listed workload options).
    pub fn load(&self, path: &Path, any_fio_option: bool) -> Result<Plan, PlanError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PlanError(format!("{}: cannot read plan: {e}", path.display())))?;
        let origin = path.display().to_string();
        self.parse_source(&PlanSource::new(&text, &origin).allowing_any_fio_option(any_fio_option))
    }

    /// Parse a plan: the common part, then the tables of the one family they belong to.
    /// Its fio options are the listed workload options only.
    pub fn parse(&self, text: &str, origin: &str) -> Result<Plan, PlanError> {
        self.parse_source(&PlanSource::new(text, origin))
    }

    /// Parse a plan from its source (see [`Registry::parse`]).
    pub fn parse_source(&self, src: &PlanSource) -> Result<Plan, PlanError> {
        let origin = src.origin;
        let owned: Vec<&str> = self
            .families
            .iter()
            .flat_map(|f| f.tables().iter().map(|t| table_key(t)))
            .collect();
        let (common, keys) = parse_common(src, &owned)?;
        // The families whose tables the plan holds, each with its first table's offset.
        let present: Vec<(&'static dyn Family, usize)> = self
            .families
            .iter()
            .filter_map(|f| {
                keys.iter()
                    .find(|(k, _)| f.tables().iter().any(|t| table_key(t) == k))
                    .map(|(_, at)| (*f, *at))
            })
            .collect();
        match present[..] {
            [] => {
                let with_tables: Vec<&&dyn Family> = self
                    .families
                    .iter()
                    .filter(|f| !f.tables().is_empty())
                    .collect();
                let first = with_tables
                    .first()
                    .and_then(|f| f.tables().first())
                    .copied()
                    .unwrap_or("table");
                let hints: Vec<String> = with_tables.iter().map(|f| f.plan_hint(self)).collect();
                Err(PlanError(format!(
                    "{origin}: no {first}: a plan needs {}",
                    hints.join(", or ")
                )))
            }
            [(f, _)] => Ok(Plan {
                body: f.parse(src, &common, self)?,
                common,
                family: f.name(),
            }),
            [(a, at), (b, _), ..] => Err(PlanError(format!(
                "{}: a plan runs {} or {}, not both",
                src.at(at),
                a.plan_noun(),
                b.plan_noun()
            ))),
        }
    }

    /// The plan `--profile NAME` runs.
    pub fn profile(&self, name: &str, req: &ProfileRequest) -> Result<Plan, PlanError> {
        match self.get(name).filter(|f| f.offers_profile()) {
            Some(f) => f.profile(req, self),
            None => Err(PlanError(format!(
                "--profile {name:?}: allowed profiles: {}",
                self.profiles().join(", ")
            ))),
        }
    }

    /// Add every family's options to `cmd` (`qoslab bench`).
    pub fn cli(&self, cmd: clap::Command) -> clap::Command {
        self.families.iter().fold(cmd, |c, f| f.cli(c))
    }

    /// The families for `qoslab bench --help`: name, plan tables or profile, about line.
    pub fn help(&self) -> String {
        let mut out = String::from("WORKLOAD FAMILIES (--profile NAME, or a plan's tables):\n");
        let width = self
            .families
            .iter()
            .map(|f| f.name().len())
            .max()
            .unwrap_or(0);
        for f in &self.families {
            let mut how: Vec<String> = Vec::new();
            if f.offers_profile() {
                how.push(format!("--profile {}", f.name()));
            }
            if !f.suites().is_empty() {
                how.push(format!("--suite {}", f.suites().join("|")));
            }
            if !f.tables().is_empty() {
                how.push(f.tables().join(" "));
            }
            if f.job_set().is_some() {
                how.push(format!("[[workload]] profile = \"{}\"", f.name()));
            }
            out.push_str(&format!(
                "  {:<width$}  {}\n  {:<width$}  {}\n",
                f.name(),
                f.about(),
                "",
                how.join("; ")
            ));
        }
        out
    }
}

/// The TOML key of a table written as in TOML: `[[workload]]` → `workload`.
fn table_key(t: &str) -> &str {
    t.trim_matches(|c| c == '[' || c == ']')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A family that owns `[[thing]]` and counts its steps.
    struct Things;
    #[derive(Debug)]
    struct ThingsPlan(usize);

    impl FamilyPlan for ThingsPlan {
        fn configure(&mut self, _: &mut Common, _: &Options) -> Result<(), PlanError> {
            Ok(())
        }
        fn banner(&self, _: &Common, _: &Target, _: &Path) -> String {
            String::new()
        }
        fn prepare(&mut self, _: &mut Prepare) -> Result<RunHeader, RunError> {
            unreachable!()
        }
        fn steps(&self) -> Vec<Step> {
            (0..self.0)
                .map(|i| Step {
                    label: format!("thing {i}"),
                    expected_secs: 1.0,
                })
                .collect()
        }
        fn run_step(&mut self, _: usize, _: &mut RunContext) -> Result<(), RunError> {
            Ok(())
        }
    }

    impl Family for Things {
        fn name(&self) -> &'static str {
            "things"
        }
        fn about(&self) -> &'static str {
            "things in a row"
        }
        fn tables(&self) -> &'static [&'static str] {
            &["[[thing]]"]
        }
        fn parse(
            &self,
            src: &PlanSource,
            _: &Common,
            _: &Registry,
        ) -> Result<Box<dyn FamilyPlan>, PlanError> {
            #[derive(serde::Deserialize)]
            struct View {
                thing: Vec<toml::Value>,
            }
            let v: View = src.deserialize()?;
            Ok(Box::new(ThingsPlan(v.thing.len())))
        }
    }

    struct Other;
    impl Family for Other {
        fn name(&self) -> &'static str {
            "other"
        }
        fn about(&self) -> &'static str {
            "another"
        }
        fn tables(&self) -> &'static [&'static str] {
            &["[other]"]
        }
        fn offers_profile(&self) -> bool {
            true
        }
        fn suites(&self) -> &'static [&'static str] {
            &["mesh", "drives"]
        }
    }

    fn reg() -> Registry {
        Registry::new(vec![&Things, &Other])
    }

    #[test]
    fn tables_dispatch_to_their_family() {
        let p = reg()
            .parse("[bench]\nname = \"n\"\n[[thing]]\n[[thing]]\n", "p.toml")
            .unwrap();
        assert_eq!(p.family, "things");
        assert_eq!(format!("{:?}", p.body), "ThingsPlan(2)");
        assert_eq!(p.steps()[1].label, "thing 1");
        assert_eq!(p.body_as::<ThingsPlan>().map(|t| t.0), Some(2));
        assert!(p.body_as::<String>().is_none());
        assert_eq!(p.common.name, "n");
        let e = reg().parse("[bench]\n", "p.toml").unwrap_err().0;
        assert_eq!(
            e,
            "p.toml: no [[thing]]: a plan needs [[thing]] for the things family, or [other] for the other family"
        );
        let e = reg()
            .parse("[other]\n\n[[thing]]\n", "p.toml")
            .unwrap_err()
            .0;
        assert_eq!(
            e,
            "p.toml:3: a plan runs [[thing]] (the things family) or [other] (the other family), not both"
        );
        let e = reg().parse("[[nope]]\n", "p.toml").unwrap_err().0;
        assert!(
            e.contains("`thing`, `other` (a plan's top-level keys)"),
            "{e}"
        );
    }

    #[test]
    fn profiles_and_help_come_from_the_registry() {
        let r = reg();
        assert_eq!(r.profiles(), ["other"]);
        assert!(r.job_set_names().is_empty());
        let e = r
            .profile("things", &ProfileRequest::default())
            .unwrap_err()
            .0;
        assert_eq!(e, "--profile \"things\": allowed profiles: other");
        let h = r.help();
        assert!(
            h.contains("  things  things in a row\n          [[thing]]\n"),
            "{h}"
        );
        assert!(
            h.contains(
                "  other   another\n          --profile other; --suite mesh|drives; [other]\n"
            ),
            "{h}"
        );
        assert_eq!(r.suites(), ["mesh", "drives"]);
        let e = r.suite("nope", &ProfileRequest::default()).unwrap_err().0;
        assert_eq!(e, "--suite \"nope\": allowed suites: mesh, drives");
        let e = r.suite("mesh", &ProfileRequest::default()).unwrap_err().0;
        assert_eq!(e, "--suite mesh: no such suite", "the family's default");
    }

    #[test]
    #[should_panic(expected = "registered twice")]
    fn a_family_registers_once() {
        Registry::new(vec![&Things, &Things]);
    }
}
