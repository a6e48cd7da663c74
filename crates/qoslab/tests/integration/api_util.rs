//! A raw HTTP/1.1 client for the REST API tests (bytes on a TcpStream, so malformed and
//! oversized requests can be sent too).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::Value;

/// The API of one node.
pub struct Api {
    /// host:port
    pub addr: String,
    pub token: Option<String>,
}

/// A reply.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("reply is not JSON ({e}): {self:?}"))
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }

    /// Assert an ONTAP-shaped error with this status and target; returns the message.
    pub fn error(&self, status: u16, target: &str) -> String {
        assert_eq!(self.status, status, "{self:?}");
        let j = self.json();
        let e = &j["error"];
        assert!(e["code"].is_string(), "error without code: {j}");
        assert_eq!(e["target"].as_str(), Some(target), "{j}");
        e["message"].as_str().expect("message").to_string()
    }
}

impl Api {
    pub fn new(url: &str) -> Api {
        Api {
            addr: url.trim_start_matches("http://").to_string(),
            token: None,
        }
    }

    /// Send raw request bytes; returns the reply.
    pub fn raw(&self, bytes: &[u8]) -> Resp {
        let mut s = TcpStream::connect(&self.addr).expect("connecting to the API");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        // The server may answer (413) before reading everything; ignore write errors.
        let _ = s.write_all(bytes);
        let mut buf = Vec::new();
        let _ = s.read_to_end(&mut buf);
        let text = String::from_utf8_lossy(&buf).into_owned();
        let (head, body) = text
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("malformed reply: {text:?}"));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {head:?}"));
        Resp {
            status,
            head: head.to_string(),
            body: body.to_string(),
        }
    }

    pub fn req(&self, method: &str, path: &str, body: Option<&str>) -> Resp {
        let body = body.unwrap_or("");
        let auth = self
            .token
            .as_ref()
            .map(|t| format!("Authorization: Bearer {t}\r\n"))
            .unwrap_or_default();
        let req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n{auth}\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        self.raw(req.as_bytes())
    }

    pub fn get(&self, path: &str) -> Resp {
        self.req("GET", path, None)
    }

    /// GET that must succeed; returns the JSON.
    pub fn get_ok(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "GET {path}: {r:?}");
        r.json()
    }

    /// POST that must return 201; returns the created record.
    pub fn create(&self, path: &str, body: &str) -> Value {
        let r = self.req("POST", path, Some(body));
        assert_eq!(r.status, 201, "POST {path} {body}: {r:?}");
        r.json()
    }

    pub fn patch_ok(&self, path: &str, body: &str) -> Value {
        let r = self.req("PATCH", path, Some(body));
        assert_eq!(r.status, 200, "PATCH {path} {body}: {r:?}");
        r.json()
    }

    /// uuid of the record named `name` in a collection.
    pub fn uuid_of(&self, collection: &str, name: &str) -> String {
        let j = self.get_ok(&format!("{collection}?name={name}"));
        j["records"][0]["uuid"]
            .as_str()
            .unwrap_or_else(|| panic!("no {name} in {collection}: {j}"))
            .to_string()
    }
}

/// The `name` of every record in a collection's listing, in the order listed.
pub fn record_names(list: &Value) -> Vec<String> {
    list["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect()
}

pub const POLICIES: &str = "/api/storage/qos/policies";
pub const VOLUMES: &str = "/api/storage/volumes";

/// The seed's two `curl -X POST` bodies, verbatim.
pub const SEED_POLICY_1: &str = r#"{
  "fixed": {
    "capacity_shared": false,
    "max_throughput_iops": 500
  },
  "name": "QoS_500iops",
  "svm": {
    "name": "nfs_svm",
    "uuid": "2829ebfb-4d6a-11e8-a5dc-005056b08451"
  }
}"#;

pub const SEED_POLICY_2: &str = r#"{
  "fixed": {
    "capacity_shared": false,
    "max_throughput_mbps": 100
  },
  "name": "QoS_100MBps",
  "svm": {
    "name": "nfs_svm",
    "uuid": "2829ebfb-4d6a-11e8-a5dc-005056b08451"
  }
}"#;
