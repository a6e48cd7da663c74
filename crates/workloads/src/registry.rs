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

#[cfg(test)]
mod tests {
    use storage_node::NodeConfig;

    const PLAN: &str = include_str!("../../../examples/seed000.toml");
    const ARRAY: &str = include_str!("../../../examples/seed000-array.toml");

    /// Seed 000's plan (examples/seed000.toml) through the registry: it runs dbench on the seed's seven volumes, on the same array, policies and
    /// volumes as examples/seed000-array.toml declares for `qoslab serve`.
    #[test]
    fn the_plan_and_the_node_config_declare_the_same_array() {
        let plan = crate::registry()
            .parse(PLAN, "examples/seed000.toml")
            .unwrap();
        assert_eq!(plan.steps().len(), 63);
        let p = plan.common.node.unwrap();
        let n = NodeConfig::parse(ARRAY, "examples/seed000-array.toml").unwrap();
        assert_eq!(p.array, n.array);
        assert_eq!(p.capacity, n.capacity);
        assert_eq!(p.policies, n.policies);
        assert_eq!(p.volumes, n.volumes);
        // Every seed volume is in the plan, under the name the comparison looks up.
        for sv in &crate::dbench::seed000::SEED {
            assert!(
                p.volumes.iter().any(|v| v.name == sv.volume),
                "{}",
                sv.volume
            );
        }
        // And the demo's (crate::dbench::seed000::ARRAY).
        let d = NodeConfig::parse(crate::dbench::seed000::ARRAY, "seed000::ARRAY").unwrap();
        assert_eq!((d.array, d.capacity), (n.array.clone(), n.capacity));
        assert_eq!(n.array.accounting.to_string(), "transfer:64KiB");
        assert_eq!(n.array.model.as_ref().unwrap().capacity_iops(), 15_850);
    }
}
