//! ONTAP's own interfaces against the node: NetApp's Python client (`netapp-ontap`, with
//! its validation on) through every call issue 14 lists, seed 000's curl commands verbatim
//! over HTTPS with basic auth, ONTAP-shaped 401s, and the CLI's certificate trust.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::util::{require_tool, run, Node, Out, QOSLAB};

const LIMIT: Duration = Duration::from_secs(120);
pub const PASSWORD: &str = "Netapp1!";

/// `https://127.0.0.1:PORT` → `127.0.0.1:PORT`.
pub fn host_port(url: &str) -> String {
    url.trim_start_matches("https://").to_string()
}

/// Create an API user with `qoslab user create --password-stdin` (the node notices).
pub fn create_user(node: &Node, name: &str, password: &str) {
    let mut child = Command::new(QOSLAB)
        .args(["user", "create", name, "--password-stdin", "--data-dir"])
        .arg(node.data_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running qoslab user create");
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{password}\n").as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "qoslab user create: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An HTTPS node with the user admin / Netapp1! (seed 000's credentials).
pub fn https_node(config: &str, extra: &[&str]) -> Node {
    let node = Node::start_https(config, extra);
    assert!(node.api_url().starts_with("https://"), "{}", node.api_url());
    create_user(&node, "admin", PASSWORD);
    node
}

fn ca(node: &Node) -> std::path::PathBuf {
    node.data_dir().join("tls").join("ca-cert.pem")
}

#[test]
fn netapp_ontap_client_drives_the_api_with_validation_on() {
    require_tool("python3");
    let probe = Command::new("python3")
        .args(["-c", "import netapp_ontap; print(netapp_ontap.__version__)"])
        .output()
        .expect("python3");
    assert!(
        probe.status.success(),
        "python3 cannot import netapp_ontap: run scripts/install-deps.sh (pip installs it): {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    let mut node = https_node("[[volume]]\nname = \"vol1\"\nsize = \"1GiB\"\n", &[]);
    let port = host_port(&node.api_url())
        .rsplit(':')
        .next()
        .unwrap()
        .to_string();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/integration/ontap_client.py");
    // requests lets REQUESTS_CA_BUNDLE override a session's `verify`: unset it so the
    // library verifies against the node's CA, as HostConnection(verify=CA) asks.
    let out = run(
        Command::new("python3")
            .arg(&script)
            .args(["localhost", &port])
            .arg(ca(&node))
            .args(["admin", PASSWORD])
            .env_remove("REQUESTS_CA_BUNDLE")
            .env_remove("CURL_CA_BUNDLE"),
        LIMIT,
    )
    .ok();
    assert!(out.stdout.contains("ok: 28 checks"), "{out}");
    node.assert_alive();
}

/// Seed 000's curl argv, verbatim but for the host name.
fn seed_curl(host: &str, body: &str) -> Vec<String> {
    [
        "-X",
        "POST",
        "-ku",
        "admin:Netapp1!",
        "-H",
        "accept: application/json",
        "-H",
        "Content-Type: application/json",
        "-d",
        body,
        &format!("https://{host}/api/storage/qos/policies"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn curl(args: &[String]) -> Out {
    run(Command::new("curl").args(args), LIMIT)
}

fn json(out: &Out) -> serde_json::Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn seed_000_curl_commands_work_verbatim_over_https_with_basic_auth() {
    require_tool("curl");
    let mut node = https_node("", &[]);
    let host = host_port(&node.api_url());
    for body in [
        crate::api_util::SEED_POLICY_1,
        crate::api_util::SEED_POLICY_2,
    ] {
        let out = curl(&seed_curl(&host, body)).ok();
        let rec = json(&out);
        assert!(rec["uuid"].is_string(), "{out}");
        assert_eq!(rec["svm"]["uuid"], "2829ebfb-4d6a-11e8-a5dc-005056b08451");
    }
    // The seed's third policy comes from its ssh line: the clustershell, as written.
    run(
        Command::new(QOSLAB)
            .args(["ontap", "--url", &node.api_url(), "--data-dir"])
            .arg(node.data_dir())
            .args(["-u", "admin:Netapp1!"])
            .args("qos adaptive-policy-group create -policy-group aQoS -vserver nfs_svm -expected-iops 5IOPS/GB -peak-iops 50IOPS/GB -peak-iops-allocation allocated-space".split(' ')),
        LIMIT,
    )
    .ok();
    // The seed's GET, verbatim but for the host.
    let get = curl(
        &[
            "-X",
            "GET",
            "-ku",
            "admin:Netapp1!",
            &format!("https://{host}/api/storage/qos/policies"),
            "-H",
            "accept: application/json",
        ]
        .map(String::from),
    )
    .ok();
    let list = json(&get);
    let names: Vec<&str> = list["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    for n in ["QoS_500iops", "QoS_100MBps", "aQoS"] {
        assert!(names.contains(&n), "{n} missing from {list}");
    }
    assert_eq!(list["num_records"], names.len());
    // Records carry uuid and name only, as in the seed's output.
    assert_eq!(list["records"][0].as_object().unwrap().len(), 2, "{list}");

    // Wrong password, unknown user, missing credentials: ONTAP-shaped 401s.
    let url = format!("https://{host}/api/storage/qos/policies");
    for auth in [
        vec!["-u", "admin:wrong"],
        vec!["-u", "nobody:Netapp1!"],
        vec![],
    ] {
        let mut args: Vec<String> = vec!["-sk".into(), "-i".into()];
        args.extend(auth.iter().map(|s| s.to_string()));
        args.push(url.clone());
        let out = curl(&args).ok();
        let (head, body) = out.stdout.split_once("\r\n\r\n").expect("headers");
        assert!(head.starts_with("HTTP/1.1 401"), "{out}");
        assert!(
            head.to_ascii_lowercase()
                .contains("www-authenticate: basic realm=\"qoslab\""),
            "{out}"
        );
        let e: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(e["error"]["code"], "6", "{body}");
        assert!(e["error"]["message"]
            .as_str()
            .unwrap()
            .contains("authentic"));
    }
    // Plain HTTP to the HTTPS port gets a readable answer, not a TLS alert.
    let out = curl(&["-s".into(), format!("http://{host}/api/cluster")]);
    assert!(out.stdout.contains("speaks HTTPS"), "{out}");
    node.assert_alive();
}

#[test]
fn the_cli_verifies_the_nodes_certificate() {
    let node = https_node("[[volume]]\nname = \"v\"\nsize = \"1MiB\"\n", &[]);
    let list = |extra: &[&str]| {
        run(
            Command::new(QOSLAB)
                .current_dir(node.scratch(""))
                .args([
                    "volume",
                    "list",
                    "--output",
                    "json",
                    "--url",
                    &node.api_url(),
                ])
                .args(extra),
            LIMIT,
        )
    };
    let dd = node.data_dir();
    let dd = dd.to_str().unwrap();
    // Unknown issuer: refused, with what to do about it.
    let out = list(&["-u", "admin:Netapp1!"]).refused();
    assert!(
        out.stderr.contains("--data-dir") && out.stderr.contains("--insecure"),
        "{out}"
    );
    // Trusted through the data directory, a CA file, or not checked (-k).
    let ca = ca(&node);
    for trust in [
        vec!["--data-dir", dd],
        vec!["--cacert", ca.to_str().unwrap()],
        vec!["-k"],
    ] {
        let mut a = trust.clone();
        a.extend(["-u", "admin:Netapp1!"]);
        let out = list(&a).ok();
        assert!(out.stdout.contains("\"name\": \"v\""), "{out}");
    }
    // Credentials: a wrong password is the API's 401; the password may come from the env.
    let out = list(&["--data-dir", dd, "-u", "admin:nope"]).refused();
    assert!(out.stderr.contains("HTTP 401"), "{out}");
    let out = run(
        Command::new(QOSLAB)
            .args(["volume", "list", "--url", &node.api_url(), "--data-dir", dd])
            .args(["-u", "admin"])
            .env("QOSLAB_PASSWORD", "Netapp1!"),
        LIMIT,
    )
    .ok();
    assert!(out.stdout.contains('v'), "{out}");
    // A CA that did not sign the node's certificate: refused.
    let node2 = Node::start_https("", &[]);
    let out = list(&[
        "--cacert",
        node2.data_dir().join("tls/ca-cert.pem").to_str().unwrap(),
        "-u",
        "admin:Netapp1!",
    ])
    .refused();
    assert!(out.stderr.contains("TLS"), "{out}");
}
