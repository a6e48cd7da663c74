//! `/docs/api`: the OpenAPI 3.0 description of the REST subset qoslab implements, where
//! ONTAP serves its own documentation. `/docs/api` is a page listing the operations with a
//! link to `/docs/api/openapi.json`, the description itself. Both are open (no
//! credentials), like `/metrics`: they describe the API, they hold no data.
//!
//! `openapi.json` is checked against the live node by schemathesis
//! (`crates/qoslab/tests/integration/api_schema.rs`): every response must conform.

/// The description (OpenAPI 3.0.3, JSON).
pub const OPENAPI: &str = include_str!("openapi.json");

/// The page at `/docs/api`: each path and its methods with their summaries.
pub fn page() -> String {
    let spec: serde_json::Value = serde_json::from_str(OPENAPI).unwrap_or_default();
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let mut rows = String::new();
    if let Some(paths) = spec["paths"].as_object() {
        for (path, ops) in paths {
            let Some(ops) = ops.as_object() else { continue };
            for (method, op) in ops {
                if method == "parameters" {
                    continue;
                }
                let what = op["summary"]
                    .as_str()
                    .or_else(|| op["operationId"].as_str())
                    .unwrap_or_default();
                rows.push_str(&format!(
                    "<tr><td><code>{}</code></td><td><code>{}</code></td><td>{}</td></tr>\n",
                    method.to_uppercase(),
                    esc(path),
                    esc(what)
                ));
            }
        }
    }
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>qoslab REST API</title></head>\
         <body><h1>qoslab REST API</h1><p>{}</p><p>OpenAPI 3.0 description: \
         <a href=\"/docs/api/openapi.json\">/docs/api/openapi.json</a></p>\
         <table><tr><th>method</th><th>path</th><th>operation</th></tr>\n{rows}</table></body></html>\n",
        esc(spec["info"]["description"].as_str().unwrap_or_default())
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_description_parses_and_names_every_route() {
        let v: serde_json::Value = serde_json::from_str(super::OPENAPI).unwrap();
        assert_eq!(v["openapi"], "3.0.3");
        for p in [
            "/api/cluster",
            "/api/storage/qos/policies/{uuid}",
            "/api/storage/volumes/{uuid}",
            "/api/svm/svms/{uuid}",
            "/api/protocols/s3/services/{svm_uuid}/buckets/{uuid}",
            "/api/storage/luns/{uuid}",
            "/api/protocols/san/igroups/{uuid}/initiators/{name}",
            "/api/protocols/san/lun-maps/{lun_uuid}/{igroup_uuid}",
            "/api/protocols/san/iscsi/services/{svm_uuid}",
            "/api/protocols/nfs/export-policies/{id}",
            "/metrics",
        ] {
            assert!(v["paths"].get(p).is_some(), "{p}");
        }
        assert!(super::page().contains("<code>/api/storage/volumes</code>"));
    }

    /// The router answers 405 when a path matches another resource than the operation's
    /// (an empty `{svm_uuid}` makes `/services//users` read as `/services/users`, the
    /// SVM `users`), so every operation documents 405, and a path identifier is never
    /// empty. Schemathesis's stateful phase found the undocumented 405 (ST103).
    #[test]
    fn every_operation_documents_405_and_path_identifiers_are_not_empty() {
        let v: serde_json::Value = serde_json::from_str(super::OPENAPI).unwrap();
        let mut ops = 0;
        for (path, item) in v["paths"].as_object().unwrap() {
            let params = |x: &serde_json::Value| x["parameters"].as_array().cloned();
            for p in params(item).into_iter().flatten() {
                if p["in"] == "path" {
                    assert_eq!(p["schema"]["minLength"], 1, "{path}: {p}");
                }
            }
            for (method, op) in item.as_object().unwrap() {
                if method == "parameters" || path.starts_with("/docs") {
                    continue;
                }
                ops += 1;
                assert!(
                    op["responses"].get("405").is_some(),
                    "{method} {path} does not document 405"
                );
            }
        }
        assert!(ops >= 30, "{ops} operations");
    }
}
