//! A plan's `[iscsi]` on a running node (`qoslab bench PLAN --node URL`): what the plan
//! wrote beyond `volume` (with its lines), and per key whether the run honours it or
//! refuses it. On the embedded node every key is node.toml's; on `--node` the run makes
//! LUN `/vol/VOL/bench` through the node's REST API, an igroup of the harness's initiator
//! and a map, so:
//!
//! - `lun = N`: honoured, the map's `logical_unit_number` (a number the harness's
//!   initiator sees already is refused by the run, naming N);
//! - `block_size`: 512 is what the node serves a REST LUN with (honoured); 4096 is refused
//!   here: a running node's 4096-byte LUNs are its own node.toml's only;
//! - `initiators`: the run's igroup holds the harness's initiator only, so a list of that
//!   initiator alone is honoured and any other name is refused here (the run never shows
//!   a running node's LUN to other hosts);
//! - `[iscsi] iqn`, `alias`: the running node's target's own; honoured when they match
//!   it (checked by the run before anything is made), else refused.
//!
//! Everything refused here is refused before the node is asked anything, on `--dry-run`
//! too.

use crate::iscsi::INITIATOR;

use super::PlanError;

/// The LUN's name inside a plan volume on a running node.
pub const LUN_NAME: &str = "bench";

/// The path of a plan volume's LUN on a running node: `/vol/VOL/bench`.
pub fn lun_path(volume: &str) -> String {
    format!("/vol/{volume}/{LUN_NAME}")
}

/// A value the plan wrote, and where: `at` is "file:line".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written<T> {
    pub value: T,
    pub at: String,
}

/// One `[[iscsi.lun]]`'s keys beyond `volume`, those the plan wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenLun {
    /// Its index among the plan's `[[iscsi.lun]]` (as the node's parser names it).
    pub index: usize,
    pub volume: String,
    pub lun: Option<Written<u16>>,
    pub block_size: Option<Written<u32>>,
    pub initiators: Option<Written<Vec<String>>>,
}

impl WrittenLun {
    /// "file:line: iscsi.lun[I] (volume "V"): KEY = VALUE: ", the head of its errors.
    pub fn head<T>(&self, w: &Written<T>, key: &str, shown: &str) -> String {
        format!(
            "{}: iscsi.lun[{}] (volume {:?}): {key} = {shown}: ",
            w.at, self.index, self.volume
        )
    }
}

/// What a plan's `[iscsi]` wrote beyond its LUNs' volumes ([`super::Common::iscsi`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WrittenIscsi {
    pub iqn: Option<Written<String>>,
    pub alias: Option<Written<String>>,
    pub luns: Vec<WrittenLun>,
}

impl WrittenIscsi {
    /// The written keys of volume `volume`'s LUN.
    pub fn lun(&self, volume: &str) -> Option<&WrittenLun> {
        self.luns.iter().find(|l| l.volume == volume)
    }

    /// Refuse what a running node cannot do (`volumes`: the run's volumes; a LUN on a
    /// volume the run does not use is not made, so its keys are not judged).
    pub fn check_on_node(&self, volumes: &[String]) -> Result<(), PlanError> {
        for l in self.luns.iter().filter(|l| volumes.contains(&l.volume)) {
            let path = lun_path(&l.volume);
            if let Some(b) = l.block_size.as_ref().filter(|b| b.value != 512) {
                return Err(PlanError(format!(
                    "{}with --node the run makes LUN {path} through the running node's REST \
                     API, and the node serves such LUNs with 512-byte blocks (a 4096-byte LUN \
                     is only one of its own node.toml's [[iscsi.lun]]); write block_size = \
                     512 or leave the key out, or run the plan on the embedded node (without \
                     --node)",
                    l.head(b, "block_size", &b.value.to_string())
                )));
            }
            if let Some(i) = &l.initiators {
                let others: Vec<&String> = i
                    .value
                    .iter()
                    .filter(|n| !n.eq_ignore_ascii_case(INITIATOR))
                    .collect();
                if !others.is_empty() {
                    let shown: Vec<String> = i.value.iter().map(|n| format!("{n:?}")).collect();
                    let names: Vec<String> = others.iter().map(|n| format!("{n:?}")).collect();
                    return Err(PlanError(format!(
                        "{}with --node the run maps LUN {path} to an igroup of its own holding \
                         {INITIATOR} only, and never shows a running node's LUN to other \
                         initiators ({}: the node's own igroups do that); write initiators = \
                         [{INITIATOR:?}] or leave the key out, or run the plan on the embedded \
                         node (without --node)",
                        l.head(i, "initiators", &format!("[{}]", shown.join(", "))),
                        names.join(", ")
                    )));
                }
            }
        }
        Ok(())
    }

    /// What `--dry-run` says of volume `volume`'s LUN beyond its path: the honoured keys
    /// ("" when the plan wrote none).
    pub fn dry_run_note(&self, volume: &str) -> String {
        let mut out = String::new();
        if let Some(l) = self.lun(volume) {
            if let Some(n) = &l.lun {
                out.push_str(&format!("; at LUN {} (the plan's lun)", n.value));
            }
            if l.block_size.is_some() {
                out.push_str("; 512-byte blocks (the plan's block_size)");
            }
            if l.initiators.is_some() {
                out.push_str(&format!(
                    "; seen by {INITIATOR} only (the plan's initiators)"
                ));
            }
        }
        out
    }

    /// What `--dry-run` says of the target's names: what the run checks the node's target
    /// against ("" when the plan wrote neither).
    pub fn dry_run_target_note(&self) -> String {
        let mut what = Vec::new();
        if let Some(i) = &self.iqn {
            what.push(format!("named {}", i.value));
        }
        if let Some(a) = &self.alias {
            what.push(format!("aliased {:?}", a.value));
        }
        if what.is_empty() {
            String::new()
        } else {
            format!(
                "; the node's iSCSI target must be {} (the plan's [iscsi])",
                what.join(" and ")
            )
        }
    }

    /// Check the running node's target (its `target.name` and `target.alias` from
    /// `/api/protocols/san/iscsi/services`) against the plan's `iqn` and `alias`; `url`
    /// names the node.
    pub fn check_target(
        &self,
        url: &str,
        name: &str,
        alias: Option<&str>,
    ) -> Result<(), PlanError> {
        if let Some(i) = self
            .iqn
            .as_ref()
            .filter(|i| !i.value.eq_ignore_ascii_case(name))
        {
            return Err(PlanError(format!(
                "{}: iscsi.iqn = {:?}: with --node fio logs in to the running node's target, \
                 and --node {url} names it {name} (its own [iscsi] iqn; a plan cannot rename \
                 it); write iqn = {name:?} or leave the key out",
                i.at, i.value
            )));
        }
        if let Some(a) = self
            .alias
            .as_ref()
            .filter(|a| Some(a.value.as_str()) != alias)
        {
            let theirs = match alias {
                Some(x) => format!("its alias is {x:?}"),
                None => "it has no alias".to_string(),
            };
            let fix = match alias {
                Some(x) => format!("write alias = {x:?} or leave the key out"),
                None => "leave the key out".to_string(),
            };
            return Err(PlanError(format!(
                "{}: iscsi.alias = {:?}: with --node fio logs in to the running node's \
                 target, and on --node {url} {theirs} (its own [iscsi] alias; a plan cannot \
                 change it); {fix}",
                a.at, a.value
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at<T>(value: T, line: usize) -> Option<Written<T>> {
        Some(Written {
            value,
            at: format!("p.toml:{line}"),
        })
    }

    fn lun(block_size: Option<u32>, initiators: Option<Vec<&str>>) -> WrittenIscsi {
        WrittenIscsi {
            luns: vec![WrittenLun {
                index: 0,
                volume: "db".into(),
                lun: at(3, 7),
                block_size: block_size.and_then(|b| at(b, 8)),
                initiators: initiators
                    .and_then(|i| at(i.into_iter().map(String::from).collect(), 9)),
            }],
            ..WrittenIscsi::default()
        }
    }

    fn vols() -> Vec<String> {
        vec!["db".to_string()]
    }

    #[test]
    fn a_4096_byte_block_is_refused_on_a_running_node_512_is_what_it_serves() {
        let e = lun(Some(4096), None).check_on_node(&vols()).unwrap_err().0;
        assert_eq!(
            e,
            "p.toml:8: iscsi.lun[0] (volume \"db\"): block_size = 4096: with --node the run \
             makes LUN /vol/db/bench through the running node's REST API, and the node serves \
             such LUNs with 512-byte blocks (a 4096-byte LUN is only one of its own \
             node.toml's [[iscsi.lun]]); write block_size = 512 or leave the key out, or run \
             the plan on the embedded node (without --node)"
        );
        lun(Some(512), None).check_on_node(&vols()).unwrap();
        // A LUN on a volume the run does not use is not made: not judged.
        lun(Some(4096), None).check_on_node(&[]).unwrap();
        assert_eq!(
            lun(Some(512), Some(vec![INITIATOR])).dry_run_note("db"),
            "; at LUN 3 (the plan's lun); 512-byte blocks (the plan's block_size); seen by \
             iqn.2026-01.lab.qoslab:bench only (the plan's initiators)"
        );
        assert_eq!(lun(None, None).dry_run_note("logs"), "");
    }

    #[test]
    fn initiators_other_than_the_harnesss_are_refused_on_a_running_node() {
        let e = lun(
            None,
            Some(vec![INITIATOR, "iqn.1993-08.org.debian:01:host"]),
        )
        .check_on_node(&vols())
        .unwrap_err()
        .0;
        assert_eq!(
            e,
            "p.toml:9: iscsi.lun[0] (volume \"db\"): initiators = \
             [\"iqn.2026-01.lab.qoslab:bench\", \"iqn.1993-08.org.debian:01:host\"]: with \
             --node the run maps LUN /vol/db/bench to an igroup of its own holding \
             iqn.2026-01.lab.qoslab:bench only, and never shows a running node's LUN to other \
             initiators (\"iqn.1993-08.org.debian:01:host\": the node's own igroups do that); \
             write initiators = [\"iqn.2026-01.lab.qoslab:bench\"] or leave the key out, or \
             run the plan on the embedded node (without --node)"
        );
        // The harness's initiator alone is what the run's igroup holds (any case).
        lun(None, Some(vec!["IQN.2026-01.lab.qoslab:bench"]))
            .check_on_node(&vols())
            .unwrap();
    }

    #[test]
    fn the_targets_name_and_alias_are_the_running_nodes() {
        let w = WrittenIscsi {
            iqn: at("iqn.2026-01.lab.qoslab:plan".to_string(), 3),
            alias: at("lab".to_string(), 4),
            luns: Vec::new(),
        };
        let url = "http://127.0.0.1:8080";
        let e = w
            .check_target(url, "iqn.2026-01.lab.qoslab:target0", None)
            .unwrap_err()
            .0;
        assert_eq!(
            e,
            "p.toml:3: iscsi.iqn = \"iqn.2026-01.lab.qoslab:plan\": with --node fio logs in to \
             the running node's target, and --node http://127.0.0.1:8080 names it \
             iqn.2026-01.lab.qoslab:target0 (its own [iscsi] iqn; a plan cannot rename it); \
             write iqn = \"iqn.2026-01.lab.qoslab:target0\" or leave the key out"
        );
        let e = w
            .check_target(url, "iqn.2026-01.lab.qoslab:plan", None)
            .unwrap_err()
            .0;
        assert_eq!(
            e,
            "p.toml:4: iscsi.alias = \"lab\": with --node fio logs in to the running node's \
             target, and on --node http://127.0.0.1:8080 it has no alias (its own [iscsi] \
             alias; a plan cannot change it); leave the key out"
        );
        let e = w
            .check_target(url, "iqn.2026-01.lab.qoslab:plan", Some("other"))
            .unwrap_err()
            .0;
        assert!(
            e.ends_with("its alias is \"other\" (its own [iscsi] alias; a plan cannot change it); write alias = \"other\" or leave the key out"),
            "{e}"
        );
        w.check_target(url, "iqn.2026-01.lab.qoslab:plan", Some("lab"))
            .unwrap();
        assert_eq!(
            w.dry_run_target_note(),
            "; the node's iSCSI target must be named iqn.2026-01.lab.qoslab:plan and aliased \
             \"lab\" (the plan's [iscsi])"
        );
        assert_eq!(WrittenIscsi::default().dry_run_target_note(), "");
    }
}
