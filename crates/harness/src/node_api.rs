//! How the harness talks to a running node's REST API (`qoslab bench --node URL`): the
//! volume lookup ([`crate::target::node_volume`]) and the node sampler's
//! ([`crate::node_sampler::RestProbe`]) per-window metrics both go through [`NodeApi`].
//!
//! The harness holds no HTTP client of its own: the CLI implements [`NodeApi`] over the
//! `api-client` crate (HTTPS with certificate checks, basic or bearer auth) in one place,
//! `qoslab`'s `bench::node_api`.

use std::sync::Arc;
use std::time::Duration;

/// A node's REST API: reads, and the changes a family that creates its own volumes makes
/// (the tenants family's volumes and policies).
pub trait NodeApi: Send + Sync {
    /// `GET path` (e.g. `/api/storage/volumes?fields=name,metric`): the JSON body of a 2xx
    /// reply, or a readable error (which names the address).
    fn get(&self, path: &str, timeout: Duration) -> Result<serde_json::Value, String>;

    /// `method path` with a JSON `body` (POST, PATCH, DELETE): the reply's JSON body on a
    /// 2xx, or a readable error (the API's message and status). Read-only clients keep the
    /// default, which refuses.
    fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
        timeout: Duration,
    ) -> Result<serde_json::Value, String> {
        let _ = (body, timeout);
        Err(format!(
            "{method} {path}: this client of the node's API is read-only"
        ))
    }
}

/// A running node as the harness reaches it: its URL (what the results store records) and
/// the client that reads its API. Equal when the URLs are.
#[derive(Clone)]
pub struct NodeHandle {
    url: String,
    api: Arc<dyn NodeApi>,
}

impl NodeHandle {
    pub fn new(url: &str, api: Arc<dyn NodeApi>) -> NodeHandle {
        NodeHandle {
            url: url.trim_end_matches('/').to_string(),
            api,
        }
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn get(&self, path: &str, timeout: Duration) -> Result<serde_json::Value, String> {
        self.api.get(path, timeout)
    }

    /// A change through the node's API ([`NodeApi::send`]).
    pub fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
        timeout: Duration,
    ) -> Result<serde_json::Value, String> {
        self.api.send(method, path, body, timeout)
    }
}

impl std::fmt::Debug for NodeHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("NodeHandle").field(&self.url).finish()
    }
}

impl PartialEq for NodeHandle {
    fn eq(&self, other: &NodeHandle) -> bool {
        self.url == other.url
    }
}

impl Eq for NodeHandle {}

/// Percent-encode a value for a REST query (`?name=VALUE`): every byte but ASCII letters,
/// digits, `-`, `_`, `.` and `*` (ONTAP's wildcard operator passes as itself). The REST
/// client's encoder: one percent-encoder in the workspace.
pub use api_client::enc as query_value;

#[cfg(test)]
mod query_value_tests {
    #[test]
    fn reserved_bytes_are_encoded_and_wildcards_pass() {
        assert_eq!(super::query_value("a b&c"), "a%20b%26c");
        assert_eq!(super::query_value("gold-n2-t0"), "gold-n2-t0");
        assert_eq!(super::query_value("vol*"), "vol*");
        assert_eq!(super::query_value("é"), "%C3%A9");
    }
}
