//! Authentication fails closed (issue 23): losing the last API user or users.json never
//! opens the API of a running node, deleting the last user of a running node is refused
//! unless forced, unknown users cost an Argon2 run like wrong passwords, and repeated
//! failures from one source back off with 429.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::api_util::{Api, Resp, VOLUMES};
use crate::realtime::RealTime;
use crate::util::{Node, TempDir, QOSLAB};

fn req(a: &Api, method: &str, path: &str, body: &str, user: Option<(&str, &str)>) -> Resp {
    let auth = user
        .map(|(u, p)| {
            format!(
                "Authorization: Basic {}\r\n",
                api_client::base64(format!("{u}:{p}").as_bytes())
            )
        })
        .unwrap_or_default();
    a.raw(
        format!(
            "{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    )
}

fn user_cmd(data: &std::path::Path, args: &[&str], stdin: &str) -> std::process::Output {
    let mut c = Command::new(QOSLAB)
        .arg("user")
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    c.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    c.wait_with_output().unwrap()
}

const ADMIN: Option<(&str, &str)> = Some(("admin", "pw-admin"));

/// `qoslab user create admin` (password `pw-admin`) in the data directory `data`.
fn create_admin(data: &std::path::Path) {
    let out = user_cmd(data, &["create", "admin", "--password-stdin"], "pw-admin\n");
    assert!(out.status.success(), "{out:?}");
}

/// A node whose only API user is `admin`, a client of its API, and its data directory.
fn node_with_admin() -> (Node, Api, std::path::PathBuf) {
    let dir = TempDir::new("node");
    let data = dir.join("data");
    create_admin(&data);
    let n = Node::start_in(dir, "", &[]);
    let a = Api::new(&n.api_url());
    (n, a, data)
}

#[test]
fn losing_the_last_user_never_opens_a_running_nodes_api() {
    let (_node, a, data) = node_with_admin();
    let body = r#"{"name":"v1","size":"1MiB"}"#;
    assert_eq!(req(&a, "POST", VOLUMES, body, None).status, 401);
    assert_eq!(req(&a, "POST", VOLUMES, body, ADMIN).status, 201);
    // The last user of a running node: refused without --force.
    let out = user_cmd(&data, &["delete", "admin"], "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("last API user"),
        "{err}"
    );
    let out = user_cmd(&data, &["delete", "admin", "--force"], "");
    assert!(out.status.success(), "{out:?}");
    // Every request now fails: no credentials, the old credentials, a GET.
    let body = r#"{"name":"v2","size":"1MiB"}"#;
    assert_eq!(req(&a, "POST", VOLUMES, body, None).status, 401);
    assert_eq!(req(&a, "GET", VOLUMES, "", None).status, 401);
    // users.json gone altogether: the same.
    std::fs::remove_file(data.join("users.json")).unwrap();
    assert_eq!(req(&a, "POST", VOLUMES, body, None).status, 401);
    assert_eq!(
        req(&a, "DELETE", &format!("{VOLUMES}?name=v1"), "", None).status,
        401
    );
    // An unreadable users file: 500, never a success.
    std::fs::write(data.join("users.json"), "not json").unwrap();
    assert_eq!(req(&a, "POST", VOLUMES, body, None).status, 500);
    // A new user brings the API back, with credentials.
    std::fs::remove_file(data.join("users.json")).unwrap();
    create_admin(&data);
    assert_eq!(req(&a, "POST", VOLUMES, body, ADMIN).status, 201);
    let vols = req(&a, "GET", VOLUMES, "", ADMIN).json();
    assert_eq!(vols["num_records"], 2, "{vols}");
}

#[test]
fn unknown_users_cost_a_hash_and_repeated_failures_back_off() {
    let mut rt = RealTime::start();
    let (_node, a, _) = node_with_admin();
    let time = |user: Option<(&str, &str)>| {
        let t = Instant::now();
        let r = req(&a, "GET", VOLUMES, "", user);
        assert_eq!(r.status, 401, "{r:?}");
        t.elapsed()
    };
    // Two of each, the minimum of each pair (4 failures: under the back-off's 5).
    let wrong = time(Some(("admin", "nope"))).min(time(Some(("admin", "nope2"))));
    let unknown = time(Some(("ghost", "x"))).min(time(Some(("ghost2", "x"))));
    // Wall-clock times: a starved host stretches the samples it stalls (a clean clone
    // read 31.8 ms vs 343.7 ms beside a test running niced hogs), so a miss is judged by
    // the starved-host rule; on a host that was not starved it fails.
    if unknown * 3 <= wrong {
        rt.short(format!(
            "an unknown user must cost an Argon2 run like a wrong password: {unknown:?} vs {wrong:?}"
        ));
    }
    // A success clears the count; then five failures are free, the sixth locks out.
    assert_eq!(req(&a, "GET", VOLUMES, "", ADMIN).status, 200);
    for i in 0..6 {
        let r = req(&a, "GET", VOLUMES, "", Some(("admin", "bad")));
        assert_eq!(r.status, 401, "failure {i}: {r:?}");
    }
    let r = req(&a, "GET", VOLUMES, "", ADMIN);
    let msg = r.error(429, "");
    assert!(msg.contains("retry in"), "{msg}");
    assert!(r.header("Retry-After").is_some(), "{r:?}");
    // After the wait, the right password works again and clears the record.
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(req(&a, "GET", VOLUMES, "", ADMIN).status, 200);
    assert_eq!(
        req(&a, "GET", VOLUMES, "", Some(("admin", "bad"))).status,
        401
    );
    rt.finish();
}

/// Failures count per source network, an IPv4 /24 (an IPv6 /64): six wrong passwords from
/// six loopback addresses are one source's, and the next request, from a seventh address,
/// waits (issue 32: per exact address, 12 loopback addresses made 60 guesses in 1.7 s).
#[test]
fn failures_from_one_24_back_off_together() {
    use std::io::Read;
    let (node, _, _) = node_with_admin();
    let url = node.api_url();
    let api: std::net::SocketAddr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    let status_from = |from: &str, user: (&str, &str)| -> u16 {
        let mut s = crate::nfs_util::connect_from(from.parse().unwrap(), api, false);
        let auth = api_client::base64(format!("{}:{}", user.0, user.1).as_bytes());
        write!(
            s,
            "GET {VOLUMES} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Basic {auth}\r\n\r\n"
        )
        .unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).unwrap();
        r.split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    };
    for i in 0..6 {
        let from = format!("127.0.0.{}", i + 2);
        assert_eq!(status_from(&from, ("admin", "guess")), 401, "{from}");
    }
    assert_eq!(
        status_from("127.0.0.99", ADMIN.unwrap()),
        429,
        "the /24 is locked out"
    );
}
