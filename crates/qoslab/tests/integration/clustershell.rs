//! `qoslab ontap`: the seeds' clustershell lines, verbatim, against a node over HTTPS;
//! ONTAP-style errors; the interactive prompt fed from standard input.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::api_util::VOLUMES;
use crate::ontap_rest::{https_node, PASSWORD};
use crate::util::{run, Node, Out, QOSLAB};

const LIMIT: Duration = Duration::from_secs(60);

fn ontap_cmd(node: &Node) -> Command {
    let mut c = Command::new(QOSLAB);
    c.args(["ontap", "--url", &node.api_url(), "--data-dir"])
        .arg(node.data_dir())
        .args(["-u", &format!("admin:{PASSWORD}")]);
    c
}

/// Run one clustershell line given as the seed writes it.
fn ontap(node: &Node, line: &str) -> Out {
    run(ontap_cmd(node).args(line.split_whitespace()), LIMIT)
}

fn ok(node: &Node, line: &str) -> String {
    let out = ontap(node, line);
    assert!(out.status.success(), "{line}\n{out}");
    out.stdout
}

fn fails(node: &Node, line: &str) -> String {
    let out = ontap(node, line);
    assert_eq!(out.status.code(), Some(1), "{line} should fail\n{out}");
    assert!(out.stderr.starts_with("Error: "), "{out}");
    out.stderr
}

/// The node's API over HTTPS for checking what the commands did.
fn policy_of(node: &Node, vol: &str) -> String {
    let c = api_client::Client::new(&api_client::ClientOptions {
        url: node.api_url(),
        auth: api_client::Auth::Basic {
            user: "admin".into(),
            password: PASSWORD.into(),
        },
        trust: api_client::Trust::CaFile(node.data_dir().join("tls/ca-cert.pem")),
        timeout: None,
    })
    .unwrap();
    let r = c.get(&format!("{VOLUMES}?name={vol}&fields=qos")).unwrap();
    r["records"][0]["qos"]["policy"]["name"]
        .as_str()
        .unwrap_or("-")
        .to_string()
}

#[test]
fn the_seeds_clustershell_lines_run_verbatim() {
    let mut node = https_node("", &[]);
    // Seed 000 (its ssh line, after `-l admin`).
    ok(&node, "qos adaptive-policy-group create -policy-group aQoS -vserver nfs_svm -expected-iops 5IOPS/GB -peak-iops 50IOPS/GB -peak-iops-allocation allocated-space");
    // Seed 001's show, with its table layout.
    let show = ok(&node, "qos adaptive-policy-group show");
    let lines: Vec<&str> = show.lines().collect();
    let cols: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(
        cols,
        ["Name", "Vserver", "Wklds", "Expected", "IOPS", "Peak", "IOPS"],
        "{show}"
    );
    assert!(lines[1].starts_with("----"), "{show}");
    let row = |name: &str| -> Vec<String> {
        lines
            .iter()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} row in\n{show}"))
            .split_whitespace()
            .map(String::from)
            .collect()
    };
    assert_eq!(row("extreme")[2..], ["0", "6144IOPS/TB", "12288IOPS/TB"]);
    assert_eq!(row("performance")[2..], ["0", "2048IOPS/TB", "4096IOPS/TB"]);
    assert_eq!(row("value")[2..], ["0", "128IOPS/TB", "512IOPS/TB"]);
    assert_eq!(row("aQoS")[1..], ["nfs_svm", "0", "5IOPS/GB", "50IOPS/GB"]);
    assert!(show.contains("4 entries were displayed."), "{show}");

    // Seed 001: EpicProd and its volumes. The PDF broke `-qos-adaptive-policy-group` and
    // `aqos-epic-prod1` across lines; the joined forms run as written.
    ok(&node, "qos adaptive-policy-group create -policy-group AqosEpicProd -vserver epic -expected-iops 15000 -peak-iops 30000 -absolute-min-iops 7500 -peak-iops-allocation used-space");
    ok(&node, "qos adaptive-policy-group create -policy-group aqos-epic-prod1 -vserver epic -expected-iops 1000 -peak-iops 2000");
    for v in [
        "epic_rhel1_a",
        "epic_rhel1_b",
        "epic_rhel2_a",
        "epic_rhel3_a",
    ] {
        ok(
            &node,
            &format!("vol create -vserver epic -volume {v} -size 5TB -aggregate aggr1"),
        );
    }
    let out = ok(
        &node,
        "vol modify -vserver epic -volume epic_rhel1_* -qos-adaptive-policy-group AqosEpicProd",
    );
    assert_eq!(
        out,
        "Volume modify successful on volume epic_rhel1_a of Vserver epic.\n\
         Volume modify successful on volume epic_rhel1_b of Vserver epic.\n\
         2 entries were modified.\n\n"
    );
    assert_eq!(policy_of(&node, "epic_rhel1_a"), "AqosEpicProd");
    assert_eq!(policy_of(&node, "epic_rhel1_b"), "AqosEpicProd");
    assert_eq!(policy_of(&node, "epic_rhel2_a"), "-");
    ok(
        &node,
        "vol modify -vserver epic -volume epic_rhel2_* -qos-adaptive-policy-group AqosEpicProd",
    );
    assert_eq!(policy_of(&node, "epic_rhel2_a"), "AqosEpicProd");
    ok(&node, "qos adaptive-policy-group modify -policy-group aqos-epic-prod1 -expected-iops 5000 -peak-iops 10000 -absolute-min-iops 4000 -peak-iops-allocation used-space");
    let show = ok(
        &node,
        "qos adaptive-policy-group show -policy-group aqos-epic-prod1",
    );
    assert!(
        show.contains("5IOPS/GB") && show.contains("10IOPS/GB"),
        "{show}"
    );
    // "none" removes the policy (seed 001's bully; it wrote "non", which names no group).
    let e = fails(
        &node,
        "vol modify -vserver epic -volume epic_rhel3_* -qos-adaptive-policy-group non",
    );
    assert!(e.contains("\"non\" does not exist"), "{e}");
    ok(
        &node,
        "vol modify -vserver epic -volume epic_rhel1_b -qos-adaptive-policy-group none",
    );
    assert_eq!(policy_of(&node, "epic_rhel1_b"), "-");
    // The seed's lines as the PDF printed them get errors naming what is wrong.
    let e = fails(
        &node,
        "vol modify -vserver epic -volume epic_rhel1_* -qos-adaptive-policy -group AqosEpicProd",
    );
    assert!(
        e.contains("-qos-adaptive-policy-group") && e.contains("needs a value"),
        "{e}"
    );
    let e = fails(&node, "qos adaptive-policy-group modify -policy-group aqos- epic-prod1 -expected-iops 5000 -peak-iops 10000 -absolute-min-iops 4000 -peak-iops -allocation used-space");
    assert_eq!(e, "Error: invalid argument \"epic-prod1\"\n");
    let e = fails(
        &node,
        "vol modify -vserver epic -volume nothing_* -qos-adaptive-policy-group AqosEpicProd",
    );
    assert!(e.contains("no entries matching your query"), "{e}");

    // Fixed policy groups: create, modify, show, delete; a group in use stays.
    ok(&node, "qos policy-group create -policy-group pg500 -vserver epic -max-throughput 500iops -is-shared false");
    ok(
        &node,
        "qos policy-group modify -policy-group pg500 -max-throughput 1000iops,100MB/s",
    );
    let show = ok(&node, "qos policy-group show");
    assert!(
        show.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == [
                    "pg500",
                    "epic",
                    "user-defined",
                    "0",
                    "0-1000IOPS,100MB/S",
                    "false"
                ]),
        "{show}"
    );
    // -fields: the key column(s), then the fields asked for, headed by their names.
    let f = ok(
        &node,
        "qos policy-group show -fields max-throughput,is-shared",
    );
    assert_eq!(
        f,
        "policy-group max-throughput   is-shared\n\
         ------------ ---------------- ---------\n\
         pg500        1000IOPS,100MB/S false\n"
    );
    let f = ok(
        &node,
        "vol show -volume epic_rhel1_* -fields qos-policy-group",
    );
    assert_eq!(
        f.lines()
            .next()
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["vserver", "volume", "qos-policy-group"],
        "{f}"
    );
    assert!(f.contains("2 entries were displayed."), "{f}");
    let f = ok(
        &node,
        "qos adaptive-policy-group show -policy-group aQoS -fields peak-iops-allocation",
    );
    assert!(f.contains("aQoS         allocated-space"), "{f}");
    assert_eq!(
        fails(&node, "qos policy-group show -fields max-thruput"),
        "Error: \"max-thruput\" is not a valid field; did you mean \"max-throughput\"? \
         (fields: policy-group, vserver, uuid, class, num-workloads, max-throughput, \
         min-throughput, is-shared)\n"
    );
    let e = fails(
        &node,
        "vol modify -vserver epic -volume epic_rhel3_a -qos-policy-group AqosEpicProd",
    );
    assert!(
        e.contains("adaptive policy group, not a policy group"),
        "{e}"
    );
    ok(
        &node,
        "vol modify -vserver epic -volume epic_rhel3_a -qos-policy-group pg500",
    );
    let e = fails(&node, "qos policy-group delete -policy-group pg500");
    assert!(
        e.starts_with("Error: command failed: ") && e.contains("in use"),
        "{e}"
    );
    ok(
        &node,
        "vol modify -vserver epic -volume epic_rhel3_a -qos-policy-group none",
    );
    ok(&node, "qos policy-group delete -policy-group pg500");
    fails(&node, "qos policy-group show -policy-group pg500");

    // ONTAP's per-volume statistics table.
    let stats = ok(
        &node,
        "qos statistics volume performance show -iterations 1",
    );
    let head: Vec<&str> = stats.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        head,
        ["Workload", "ID", "IOPS", "Throughput", "Latency"],
        "{stats}"
    );
    assert!(
        stats.lines().nth(2).unwrap().starts_with("-total-"),
        "{stats}"
    );
    assert!(stats.contains("epic_rhel1_a"), "{stats}");

    // Unknown commands and parameters: ONTAP-style errors naming them.
    assert_eq!(
        fails(&node, "qos bogus"),
        "Error: \"bogus\" is not a recognized command under \"qos\"\n"
    );
    assert_eq!(
        fails(&node, "qos policy-group shwo"),
        "Error: \"shwo\" is not a recognized command under \"qos policy-group\"; did you mean \"show\"?\n"
    );
    assert_eq!(
        fails(&node, "frobnicate"),
        "Error: \"frobnicate\" is not a recognized command\n"
    );
    assert_eq!(
        fails(
            &node,
            "qos policy-group create -policy-group x -max-thruput 5iops"
        ),
        "Error: invalid argument \"-max-thruput\"; did you mean \"-max-throughput\"?\n"
    );
    assert!(fails(
        &node,
        "qos adaptive-policy-group create -policy-group x -vserver v -peak-iops 5"
    )
    .contains("Missing required parameter \"-expected-iops\""));
    assert!(fails(
        &node,
        "qos policy-group create -policy-group x -max-throughput 5furlongs"
    )
    .contains("invalid value \"5furlongs\" for \"-max-throughput\""));
    node.assert_alive();
}

#[test]
fn the_interactive_prompt_runs_a_script_from_stdin() {
    let node = https_node("[[volume]]\nname = \"v1\"\nsize = \"1GiB\"\n", &[]);
    let mut child = ontap_cmd(&node)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"# a comment\n\
              cluster1::> qos policy-group create -policy-group pg -max-throughput 100iops\n\
              qos nonsense\n\
              vol modify -volume v1 -qos-policy-group pg\n\
              volume show -volume v1\n\
              exit\n\
              vol modify -volume v1 -qos-policy-group none\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    // One command failed, so a script exits 1; the others ran, and nothing after exit.
    assert_eq!(out.status.code(), Some(1), "{so}{se}");
    assert_eq!(
        se,
        "Error: \"nonsense\" is not a recognized command under \"qos\"\n"
    );
    assert!(
        so.contains("Volume modify successful on volume v1 of Vserver qoslab."),
        "{so}"
    );
    assert!(
        so.lines()
            .any(|l| l.starts_with("qoslab  v1") && l.ends_with("pg")),
        "{so}"
    );
}

/// ONTAP's export-policy commands with their rule parameters (`-superuser -anon
/// -allow-suid -chown-mode ...`) reach the REST API's rules; `-instance` shows them back.
#[test]
fn vserver_export_policy_rules_with_ontaps_parameters() {
    let node = https_node("", &[]);
    ok(
        &node,
        "vserver export-policy create -vserver vs0 -policyname k8s",
    );
    ok(
        &node,
        "vserver export-policy rule create -vserver vs0 -policyname k8s -clientmatch 10.244.0.0/16 \
         -rorule sys -rwrule sys -superuser sys -anon 1001 -allow-suid false -chown-mode unrestricted \
         -protocol nfs3",
    );
    ok(
        &node,
        "vserver export-policy rule create -policyname k8s -clientmatch 127.0.0.1 -rorule any -rwrule never -ruleindex 1",
    );
    let shown = ok(&node, "vserver export-policy rule show -policyname k8s");
    assert!(
        shown.contains("127.0.0.1")
            && shown.contains("10.244.0.0/16")
            && shown.contains("2 entries"),
        "{shown}"
    );
    let inst = ok(
        &node,
        "vserver export-policy rule show -policyname k8s -ruleindex 2 -instance",
    );
    for want in [
        "Superuser Security Types: sys",
        "User ID To Which Anonymous Users Are Mapped: 1001",
        "Honor SetUID Bits in SETATTR: false",
        "Change Ownership Mode: unrestricted",
        "Access Protocol: nfs3",
    ] {
        assert!(inst.contains(want), "{want}:\n{inst}");
    }
    ok(
        &node,
        "vserver export-policy rule modify -policyname k8s -ruleindex 2 -superuser none",
    );
    let inst = ok(
        &node,
        "vserver export-policy rule show -policyname k8s -ruleindex 2 -instance",
    );
    assert!(inst.contains("Superuser Security Types: none"), "{inst}");
    let e = fails(
        &node,
        "vserver export-policy rule create -policyname k8s -clientmatch any -rorule krb5 -rwrule sys",
    );
    assert!(e.contains("krb5"), "{e}");
    ok(
        &node,
        "vserver export-policy rule delete -policyname k8s -ruleindex 1",
    );
    ok(
        &node,
        "vserver export-policy rename -policyname k8s -newpolicyname kube",
    );
    let p = ok(&node, "vserver export-policy show");
    assert!(p.contains("kube") && p.contains("default"), "{p}");
    ok(&node, "vserver export-policy delete -policyname kube");
}
