//! The `s3` family: an S3 benchmark with GOSBench's plans and warp's analysis, on qoslab's
//! own driver ([`loadgen::s3`]), against any S3 endpoint, from this machine or from load
//! generators over ssh (docs/S3-BENCH.md).
//!
//! ```toml
//! [s3]                                  # GOSBench's s3_config; all keys optional
//! endpoint = "http://127.0.0.1:9000"    # or --s3-endpoint, $AWS_ENDPOINT_URL; none: embedded node
//! keys_file = "keys"                    # or access_key/secret_key, $AWS_ACCESS_KEY_ID/...
//! hosts = ["lg1", "lg2"]                # load generators (ssh); none: this process
//!
//! [[s3.test]]                           # GOSBench's tests:, its key names
//! name = "mixed"
//! read_weight = 70
//! write_weight = 20
//! delete_weight = 10
//! objects = { size_min = "1KiB", size_max = "1MiB", size_distribution = "lognormal", number_min = 100 }
//! buckets = { number_min = 1 }
//! bucket_prefix = "qoslab-bench-"
//! stop_with_runtime = "30s"
//! parallel_clients = 8
//! clean_after = true
//! expect = ["GET.ops_per_s >= 100"]
//! ```

mod charts;
mod cli;
mod coord;
mod embedded;
mod expect;
mod plan;
mod remote;
mod results;
mod run;

use clap::Args;
use harness::plan::{Common, PlanError, PlanSource};
use harness::store::SummaryTable;
use harness::{Family, FamilyPlan, Plan, ProfileRequest, Registry};
use report::svg::Chart;
use report::ReportHooks;

pub use cli::{keys_from_file, parse_mix, S3Args};
pub use expect::Expect;
pub use plan::{parse, Buckets, Conn, Count, S3Plan, TestPlan};
pub use results::{COLUMNS, KIND};
pub use run::S3Run;

/// The family's name (`--profile s3`).
pub const NAME: &str = "s3";

/// Where a `--profile s3` plan says it came from.
const PROFILE_ORIGIN: &str = "--profile s3";

/// The family: `[s3]` with `[[s3.test]]` tables, `--profile s3`.
pub struct S3;

impl Family for S3 {
    fn name(&self) -> &'static str {
        NAME
    }

    fn about(&self) -> &'static str {
        "S3 benchmark: GOSBench's plans (weights, size distributions, workers), warp's analysis (ops/s and MiB/s per second, percentiles, TTFB, errors); any endpoint, many load generators over ssh"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["[s3]"]
    }

    fn plan_hint(&self, _registry: &Registry) -> String {
        "[s3] with [[s3.test]]s for the s3 family".into()
    }

    fn plan_noun(&self) -> String {
        "[[s3.test]]s (the s3 family)".into()
    }

    fn parse(
        &self,
        src: &PlanSource,
        _common: &Common,
        _registry: &Registry,
    ) -> Result<Box<dyn FamilyPlan>, PlanError> {
        Ok(Box::new(S3Run::new(plan::parse(src)?)))
    }

    fn offers_profile(&self) -> bool {
        true
    }

    /// One test from the `--s3-*` options (applied in `configure`).
    fn profile(&self, req: &ProfileRequest, _registry: &Registry) -> Result<Plan, PlanError> {
        if req.plan_file || req.target || req.node || req.clients {
            return Err(PlanError(
                "--profile s3 takes --s3-* options (--s3-endpoint, --s3-hosts, --s3-mix, ...), not a plan file, --target, --node or --client".into(),
            ));
        }
        let text = format!(
            "# --profile s3 (the test comes from the --s3-* options)\n[s3]\n[[s3.test]]\nname = \"{NAME}\"\nread_weight = 1\n"
        );
        let mut common = Common::without_file(NAME, PROFILE_ORIGIN, text.clone());
        if let Some(r) = req.runtime {
            common.runtime = r;
        }
        if let Some(r) = req.ramp {
            common.ramp = r;
        }
        let body = plan::parse(&PlanSource::new(&text, PROFILE_ORIGIN))?;
        Ok(Plan {
            common,
            family: NAME,
            body: Box::new(S3Run::new(body)),
        })
    }

    fn cli(&self, cmd: clap::Command) -> clap::Command {
        S3Args::augment_args(cmd)
    }
}

/// A test's table: ops/s and latency per operation and iteration.
impl ReportHooks for S3 {
    fn table_charts(&self, t: &SummaryTable) -> Option<Vec<Chart>> {
        (t.kind == KIND).then(|| charts::charts(t))
    }
}
