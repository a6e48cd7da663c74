//! Real-time assertions that hold on a loaded machine (issue 35, docs/TESTING.md): a test
//! that measures this machine outside the harness (fio against a node, a policy change
//! reaching fio in time) samples the host's tool sets while it runs, this process and
//! everything it started being the job. When a lower bound on a rate (or an upper bound on
//! a time) fails, the product's own `starved-host` rule (assess, on the kernel's pressure
//! stall information) decides: a starved host makes the failure *inconclusive* — the test
//! prints the cause with its pressure figures and passes, and `scripts/stress-tests.sh`
//! counts it — and otherwise the failure stands. A bound in the direction starvation cannot
//! explain (a ceiling exceeded) is asserted plainly.

use std::time::Instant;

use toolsets::{Roles, Sampler};

/// Where `scripts/stress-tests.sh` collects the inconclusive tests' causes (one file per
/// test, named after it).
pub const INCONCLUSIVE_DIR: &str = "QOSLAB_TEST_INCONCLUSIVE_DIR";

/// The host's tool sets over a real-time test, and the bounds a starved host may break
/// that it broke.
pub struct RealTime {
    sampler: Option<Sampler>,
    started: Instant,
    short: Vec<String>,
}

impl RealTime {
    pub fn start() -> RealTime {
        RealTime {
            sampler: Some(Sampler::local(Roles::harness_only(None))),
            started: Instant::now(),
            short: Vec::new(),
        }
    }

    /// Whether this host was starved so far (the `starved-host` rule over the samples
    /// since [`start`](Self::start)): the rule's reason with its pressure figures.
    fn starved(&mut self) -> Result<String, String> {
        let series = self.sampler.take().map(Sampler::stop).unwrap_or_default();
        let Some(h) = series.first().filter(|h| !h.samples.is_empty()) else {
            return Err("no tool-set samples over the test".into());
        };
        let f = assess::figures::summarize(h, 0, u64::MAX, &[]);
        match assess::starvation(&f) {
            Some(d) => Ok(format!("{}: {}", d.bottleneck, d.reason)),
            None => Err(format!(
                "the host was not starved over the test's {:.0} s: {}",
                self.started.elapsed().as_secs_f64(),
                f.pressure
                    .map(|p| format!("pressure {}", p.describe()))
                    .unwrap_or_else(|| "no pressure stall information".into())
            )),
        }
    }

    /// A bound a starved host may break failed (`failure` says which, with its figures):
    /// the test goes on (every other check still runs) and [`finish`](Self::finish)
    /// decides.
    pub fn short(&mut self, failure: String) {
        self.short.push(failure);
    }

    /// The end of the test: nothing fell short, or what did is inconclusive because the
    /// host was starved — printed, recorded for the stress script, and the test ends green
    /// — else the test fails naming every shortfall.
    pub fn finish(mut self) {
        if self.short.is_empty() {
            return;
        }
        let failure = self.short.join("; ");
        match self.starved() {
            Ok(cause) => {
                let test = std::thread::current()
                    .name()
                    .unwrap_or("unnamed test")
                    .to_string();
                eprintln!("INCONCLUSIVE: {test}: {failure}; {cause}");
                if let Ok(dir) = std::env::var(INCONCLUSIVE_DIR) {
                    let _ = std::fs::create_dir_all(&dir);
                    let _ = std::fs::write(
                        std::path::Path::new(&dir).join(test.replace("::", "__")),
                        format!("{failure}; {cause}\n"),
                    );
                }
            }
            Err(not) => panic!("{failure} ({not})"),
        }
    }
}
