//! The tenants family's command-line options (added to `qoslab bench`).

use clap::Args;

use super::spec::{RawClass, RawTenants, TenantsSpec};

/// Options of the tenants profile (ignored by other profiles).
#[derive(Args, Debug, Clone)]
#[command(next_help_heading = "Tenants profile (--profile tenants)")]
pub struct TenantsArgs {
    /// Scale points: tenants per class, comma-separated.
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', default_values_t = [1usize, 2, 4, 8, 16])]
    pub points: Vec<usize>,
    /// Iterations per scale point.
    #[arg(
        id = "tenant_iterations",
        long = "tenant-iterations",
        value_name = "N",
        default_value_t = 3
    )]
    pub iterations: u32,
    /// Applications, one class each: git, redis, build, broker, fio (on volumes the
    /// applications but fio mount file
    /// systems: root, /dev/fuse and loop devices; on --target DIR they run in a directory
    /// per tenant; --target /dev/X,/dev/Y takes fio only).
    #[arg(long, value_name = "APP,...", value_delimiter = ',', default_values_t = ["git".to_string(), "redis".to_string()])]
    pub apps: Vec<String>,
}

impl Default for TenantsArgs {
    fn default() -> TenantsArgs {
        TenantsArgs {
            points: vec![1, 2, 4, 8, 16],
            iterations: 3,
            apps: vec!["git".into(), "redis".into()],
        }
    }
}

impl TenantsArgs {
    /// The spec: one unlimited class per application, named after it.
    pub fn spec(&self, runtime: Option<f64>, ramp: Option<f64>) -> Result<TenantsSpec, String> {
        let t = RawTenants {
            points: Some(self.points.iter().map(|&p| p as i64).collect()),
            iterations: Some(self.iterations as i64),
            runtime: runtime.map(toml::Value::Float),
            ramp: ramp.map(toml::Value::Float),
            ..RawTenants::default()
        };
        let classes: Vec<RawClass> = self
            .apps
            .iter()
            .map(|a| RawClass {
                name: a.clone(),
                policy: None,
                size: None,
                snapshot_reserve_percent: None,
                fs: None,
                app: a.clone(),
                mix: None,
                iodepth: None,
                rate_iops: None,
                fio_size: None,
                git: None,
                redis: None,
                build: None,
                broker: None,
                expect_floor: None,
                expect_ceiling: None,
            })
            .collect();
        TenantsSpec::from_raw(&t, &classes).map_err(|e| format!("--profile tenants: {e}"))
    }

    /// What the run stores as its plan text.
    pub fn describe(&self) -> String {
        format!(
            "# --profile tenants\n[tenants]\npoints = {:?}\niterations = {}\n{}",
            self.points,
            self.iterations,
            self.apps
                .iter()
                .map(|a| format!("\n[[class]]\nname = \"{a}\"\napp = \"{a}\"\n"))
                .collect::<String>()
        )
    }
}
