//! Crash safety: create/modify/delete requests with `kill -9` at random points; after a
//! restart the state equals the acknowledged changes (plus, at most, the one request in
//! flight when the node died), and flushed volume data is intact.

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::api_util::{Api, POLICIES, VOLUMES};
use crate::util::{pattern, require_tool, run, Node};

/// What the tests can see: policy name → max IOPS; volume name → (size, policy).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    policies: BTreeMap<String, u64>,
    volumes: BTreeMap<String, (u64, Option<String>)>,
}

#[derive(Clone, Debug)]
enum Op {
    CreatePolicy(String, u64),
    ModifyPolicy(String, u64),
    DeletePolicy(String),
    CreateVolume(String, u64, Option<String>),
    ModifyVolume(String, u64, Option<String>),
    DeleteVolume(String),
}

impl State {
    fn apply(&mut self, op: &Op) {
        match op {
            Op::CreatePolicy(n, i) | Op::ModifyPolicy(n, i) => {
                self.policies.insert(n.clone(), *i);
            }
            Op::DeletePolicy(n) => {
                self.policies.remove(n);
            }
            Op::CreateVolume(n, s, p) | Op::ModifyVolume(n, s, p) => {
                self.volumes.insert(n.clone(), (*s, p.clone()));
            }
            Op::DeleteVolume(n) => {
                self.volumes.remove(n);
            }
        }
    }

    /// Read the state back through the API (user policies only).
    fn read(a: &Api) -> State {
        let mut s = State::default();
        let p = a.get_ok(&format!("{POLICIES}?fields=*"));
        for r in p["records"].as_array().unwrap() {
            if r["builtin"] == Value::Bool(true) {
                continue;
            }
            s.policies.insert(
                r["name"].as_str().unwrap().into(),
                r["fixed"]["max_throughput_iops"].as_u64().unwrap(),
            );
        }
        let v = a.get_ok(&format!("{VOLUMES}?fields=size,qos"));
        for r in v["records"].as_array().unwrap() {
            s.volumes.insert(
                r["name"].as_str().unwrap().into(),
                (
                    r["size"].as_u64().unwrap(),
                    r["qos"]["policy"]["name"].as_str().map(str::to_string),
                ),
            );
        }
        s
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random valid next operation for `s` (`k` makes names unique).
fn next_op(s: &State, r: &mut Rng, k: u64) -> Op {
    let pick =
        |r: &mut Rng, names: Vec<&String>| names[r.below(names.len() as u64) as usize].clone();
    let policy_choice = |r: &mut Rng| -> Option<String> {
        if s.policies.is_empty() || r.below(3) == 0 {
            None
        } else {
            Some(pick(r, s.policies.keys().collect()))
        }
    };
    loop {
        match r.below(6) {
            0 => return Op::CreatePolicy(format!("p{k}"), 100 + r.below(10_000)),
            1 if !s.policies.is_empty() => {
                return Op::ModifyPolicy(
                    pick(r, s.policies.keys().collect()),
                    100 + r.below(10_000),
                )
            }
            2 => {
                let unused: Vec<&String> = s
                    .policies
                    .keys()
                    .filter(|p| !s.volumes.values().any(|(_, vp)| vp.as_ref() == Some(p)))
                    .collect();
                if !unused.is_empty() {
                    return Op::DeletePolicy(pick(r, unused));
                }
            }
            3 => {
                let p = policy_choice(r);
                return Op::CreateVolume(format!("v{k}"), (1 + r.below(64)) << 20, p);
            }
            4 if s.volumes.len() > 1 => {
                let n = pick(r, s.volumes.keys().filter(|v| *v != "data").collect());
                let size = s.volumes[&n].0 + (r.below(4) << 20);
                let p = policy_choice(r);
                return Op::ModifyVolume(n, size, p);
            }
            5 if s.volumes.len() > 1 => {
                return Op::DeleteVolume(pick(
                    r,
                    s.volumes.keys().filter(|v| *v != "data").collect(),
                ))
            }
            _ => {}
        }
    }
}

fn send(a: &Api, op: &Op) -> u16 {
    let policy_json = |p: &Option<String>| match p {
        Some(p) => format!(r#"{{"policy": {{"name": "{p}"}}}}"#),
        None => r#"{"policy": null}"#.to_string(),
    };
    let uuid = |coll: &str, n: &str| a.uuid_of(coll, n);
    let r = match op {
        Op::CreatePolicy(n, i) => a.req(
            "POST",
            POLICIES,
            Some(&format!(
                r#"{{"name": "{n}", "fixed": {{"max_throughput_iops": {i}}}}}"#
            )),
        ),
        Op::ModifyPolicy(n, i) => a.req(
            "PATCH",
            &format!("{POLICIES}/{}", uuid(POLICIES, n)),
            Some(&format!(r#"{{"fixed": {{"max_throughput_iops": {i}}}}}"#)),
        ),
        Op::DeletePolicy(n) => a.req("DELETE", &format!("{POLICIES}/{}", uuid(POLICIES, n)), None),
        Op::CreateVolume(n, s, p) => a.req(
            "POST",
            VOLUMES,
            Some(&format!(
                r#"{{"name": "{n}", "size": {s}, "qos": {}}}"#,
                policy_json(p)
            )),
        ),
        Op::ModifyVolume(n, s, p) => a.req(
            "PATCH",
            &format!("{VOLUMES}/{}", uuid(VOLUMES, n)),
            Some(&format!(r#"{{"size": {s}, "qos": {}}}"#, policy_json(p))),
        ),
        Op::DeleteVolume(n) => a.req("DELETE", &format!("{VOLUMES}/{}", uuid(VOLUMES, n)), None),
    };
    r.status
}

#[test]
fn api_crash_kill9_keeps_every_acknowledged_change() {
    require_tool("nbdcopy");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("crash test seed {seed}");
    let mut rng = Rng(seed);
    // "data" holds flushed data; the random operations leave it alone.
    let mut node = Node::start("[[volume]]\nname = \"data\"\nsize = \"4MiB\"\n");

    // Flushed data survives kill -9 (nbdcopy flushes the destination at the end).
    let data = pattern(seed, 4 << 20);
    node.nbdcopy_in("data", &data, Duration::from_secs(60));

    let mut model = State::read(&Api::new(&node.api_url()));
    let mut k = 0u64;
    let mut sent = 0u64;
    let started = Instant::now();
    for trial in 0..20 {
        let a = Api::new(&node.api_url());
        // A writer thread issues requests back to back; acknowledged ones go to the model.
        let shared = Arc::new(Mutex::new((model.clone(), None::<Op>)));
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let writer = {
            let shared = shared.clone();
            let stop = stop.clone();
            let addr = a.addr.clone();
            let mut r = Rng(rng.next() | 1);
            let base = k;
            std::thread::spawn(move || {
                let a = Api { addr, token: None };
                let mut k = base;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    k += 1;
                    let op = {
                        let mut g = shared.lock().unwrap();
                        let op = next_op(&g.0, &mut r, k);
                        g.1 = Some(op.clone());
                        op
                    };
                    // Any failure (including the connection dying) ends the run.
                    let status = std::panic::catch_unwind(|| send(&a, &op)).unwrap_or(0);
                    let mut g = shared.lock().unwrap();
                    if (200..300).contains(&status) {
                        g.0.apply(&op);
                        g.1 = None;
                    } else if status == 0 {
                        return k;
                    } else {
                        panic!("{op:?} was refused with HTTP {status}");
                    }
                }
                k
            })
        };
        std::thread::sleep(Duration::from_millis(20 + rng.below(300)));
        node.kill9();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let last = writer.join().expect("writer panicked");
        sent += last - k;
        eprintln!("trial {trial}: {} requests", last - k);
        k = last + 1000;
        let (acked, in_flight) = shared.lock().unwrap().clone();
        node.start_again();
        let got = State::read(&Api::new(&node.api_url()));
        let mut with_pending = acked.clone();
        if let Some(op) = &in_flight {
            with_pending.apply(op);
        }
        assert!(
            got == acked || got == with_pending,
            "trial {trial} (seed {seed}): state after kill -9 differs\n got: {got:?}\nacked: {acked:?}\nin flight: {in_flight:?}"
        );
        // Every volume file exists with its size.
        for (name, (size, _)) in &got.volumes {
            let len = std::fs::metadata(node.volume_file(name)).map(|m| m.len());
            assert_eq!(len.ok(), Some(*size), "trial {trial}: file of {name}");
        }
        model = got;
    }
    let back = node.scratch("back.img");
    run(
        Command::new("nbdcopy").arg(node.uri("data")).arg(&back),
        Duration::from_secs(60),
    )
    .ok();
    crate::util::assert_same_bytes(
        "data after 20 kill -9s",
        &std::fs::read(&back).unwrap(),
        &data,
    );
    eprintln!(
        "20 trials in {:?}; {} requests sent; final state: {} policies, {} volumes",
        started.elapsed(),
        sent,
        model.policies.len(),
        model.volumes.len()
    );
}
