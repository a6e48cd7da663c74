//! Every workload family, in one list. The order is the order of `qoslab bench --help`, of
//! `--profile`'s values and of the plan keys named in messages.

use std::sync::OnceLock;

use harness::store::RunRecord;
use harness::{Family, Registry};
use report::{Format, ReportHooks};

/// A family as the registry holds it: the harness's seam and the report's hooks.
pub trait WorkloadFamily: Sync {
    fn family(&self) -> &dyn Family;
    fn report(&self) -> &dyn ReportHooks;
}

impl<T: Family + ReportHooks + Sync> WorkloadFamily for T {
    fn family(&self) -> &dyn Family {
        self
    }
    fn report(&self) -> &dyn ReportHooks {
        self
    }
}

/// The families. One line each.
pub static FAMILIES: &[&dyn WorkloadFamily] = &[
    &crate::fio_plan::Fio,
    &crate::dbench::Dbench,
    &crate::isolation::Isolation,
    &crate::ramp::Ramp,
    &crate::s3::S3,
    &crate::tenants::Tenants,
    &crate::suite::Suites,
    &crate::provisioned::Provisioned,
];

/// The harness's registry of [`FAMILIES`].
pub fn registry() -> &'static Registry {
    static REGISTRY: OnceLock<Registry> = OnceLock::new();
    REGISTRY.get_or_init(|| Registry::new(FAMILIES.iter().map(|f| f.family()).collect()))
}

/// Every family's report hooks, in registry order.
pub fn hooks() -> Vec<&'static dyn ReportHooks> {
    FAMILIES.iter().map(|f| f.report()).collect()
}

/// A stored run exported with every family's report hooks.
pub fn export(run: &RunRecord, format: Format) -> Vec<u8> {
    report::export(run, format, &hooks())
}
