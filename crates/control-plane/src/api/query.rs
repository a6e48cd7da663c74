//! ONTAP list semantics: `fields=` projection, field filters with ONTAP's query operators
//! (`*` `!` `|` `<` `>` `<=` `>=` `..`), `order_by`, `max_records` with a `_links.next`
//! cursor, and `return_records=false`. Parsed and checked once here; a filter that cannot
//! apply to its field is a 400 naming the operator, never a silently empty list.

use std::cmp::Ordering;

use serde_json::{json, Map, Value};

use super::model::{code, ApiError};

type R<T> = Result<T, ApiError>;

/// Parsed query parameters of a request on a collection or a record.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Query {
    pub fields: Vec<String>,
    /// Field-path filters (`name=vol*`, `size=>1073741824`), as given.
    pub filters: Vec<(String, String)>,
    /// `order_by=name desc,size`: (path, descending).
    pub order_by: Vec<(String, bool)>,
    pub max_records: Option<usize>,
    /// `return_records=false`: only `num_records`.
    pub return_records: bool,
    /// Paging cursor from a `_links.next` link: the key of the first record of the page
    /// (`start.uuid=`; `start.id=`, `start.name=` or `start.lun.uuid=`+`start.igroup.uuid=`
    /// in collections whose records have no uuid), as (path, value).
    pub start: Vec<(String, String)>,
    /// The raw query string (to build `_links.next`).
    pub raw: String,
}

/// Parse a query string. Values are percent-decoded; ONTAP's control parameters are
/// checked here (`max_records` a positive integer, `return_records` a boolean,
/// `order_by` paths with `asc`/`desc`).
pub fn parse_query(q: &str) -> R<Query> {
    let mut out = Query {
        return_records: true,
        raw: q.to_string(),
        ..Query::default()
    };
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (percent_decode(k), percent_decode(v));
        match k.as_str() {
            "fields" => out.fields.extend(
                v.split(',')
                    .map(str::trim)
                    .filter(|f| !f.is_empty())
                    .map(str::to_string),
            ),
            "max_records" => match v.parse::<usize>() {
                Ok(n) if n > 0 => out.max_records = Some(n),
                _ => {
                    return Err(ApiError::bad(
                        code::OUT_OF_RANGE,
                        "max_records",
                        format!("max_records = {v:?}: expected a positive integer"),
                    ))
                }
            },
            "return_records" => {
                out.return_records = match v.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(ApiError::bad(
                            code::INVALID_TYPE,
                            "return_records",
                            format!("return_records = {v:?}: expected true or false"),
                        ))
                    }
                }
            }
            "order_by" => {
                for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                    let mut words = item.split_whitespace();
                    let path = words.next().unwrap_or_default().to_string();
                    let desc = match words.next() {
                        None | Some("asc") => false,
                        Some("desc") => true,
                        Some(o) => {
                            return Err(ApiError::bad(
                                code::OUT_OF_RANGE,
                                "order_by",
                                format!("order_by {item:?}: {o:?} is not asc or desc"),
                            ))
                        }
                    };
                    out.order_by.push((path, desc));
                }
            }
            _ if k.starts_with("start.") => out.start.push((k["start.".len()..].to_string(), v)),
            // Synchronous here: every reply is final, so there is nothing to wait for.
            "return_timeout" => {}
            _ => out.filters.push((k, v)),
        }
    }
    Ok(out)
}

/// Decode `%XX` and `+`; invalid escapes are kept as they are.
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len()
                && b[i + 1].is_ascii_hexdigit()
                && b[i + 2].is_ascii_hexdigit() =>
            {
                let hex = |c: u8| (c as char).to_digit(16).unwrap_or(0) as u8;
                out.push(hex(b[i + 1]) * 16 + hex(b[i + 2]));
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One `|` alternative of a filter value.
#[derive(Debug, Clone, PartialEq)]
enum Term {
    /// Exact or `*`-wildcard match on the value's text.
    Pattern(String),
    Cmp(CmpOp, f64),
    Range(f64, f64),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum CmpOp {
    Lt,
    Le,
    Gt,
    Ge,
}

/// A parsed filter: alternatives, each possibly negated (`!`).
#[derive(Debug, Clone, PartialEq)]
pub struct Filter {
    path: String,
    alts: Vec<(bool, Term)>,
}

fn parse_term(path: &str, s: &str) -> R<Term> {
    let num = |op: &str, x: &str| -> R<f64> {
        x.trim().parse::<f64>().map_err(|_| {
            ApiError::bad(
                code::OUT_OF_RANGE,
                path,
                format!(
                    "query {path}={op}{x}: the operator {op:?} needs a number after it \
                     (ONTAP's query operators: * ! | < > <= >= ..)"
                ),
            )
        })
    };
    for (op, c) in [
        ("<=", CmpOp::Le),
        (">=", CmpOp::Ge),
        ("<", CmpOp::Lt),
        (">", CmpOp::Gt),
    ] {
        if let Some(x) = s.strip_prefix(op) {
            return Ok(Term::Cmp(c, num(op, x)?));
        }
    }
    if let Some((a, b)) = s.split_once("..") {
        return Ok(Term::Range(num("..", a)?, num("..", b)?));
    }
    Ok(Term::Pattern(s.to_string()))
}

impl Filter {
    pub fn parse(path: &str, value: &str) -> R<Filter> {
        let mut alts = Vec::new();
        for alt in value.split('|') {
            let (neg, body) = match alt.strip_prefix('!') {
                Some(b) => (true, b),
                None => (false, alt),
            };
            alts.push((neg, parse_term(path, body)?));
        }
        Ok(Filter {
            path: path.to_string(),
            alts,
        })
    }

    /// Whether a record matches. Positive alternatives are OR-ed; negated ones must all
    /// hold (`!a|!b`: neither a nor b). An absent field matches nothing but a negation.
    pub fn matches(&self, record: &Value) -> R<bool> {
        let v = path_value(record, &self.path);
        let mut any_pos = false;
        let mut pos_hit = false;
        for (neg, t) in &self.alts {
            let hit = match v {
                None => false,
                Some(v) => self.term_matches(t, v)?,
            };
            if *neg {
                if hit {
                    return Ok(false);
                }
            } else {
                any_pos = true;
                pos_hit |= hit;
            }
        }
        Ok(!any_pos || pos_hit)
    }

    fn term_matches(&self, t: &Term, v: &Value) -> R<bool> {
        let op = match t {
            Term::Pattern(p) => return Ok(glob(p, &value_text(v))),
            Term::Range(..) => "..",
            Term::Cmp(op, _) => op_text(*op),
        };
        let Some(n) = v.as_f64() else {
            return Err(ApiError::bad(
                code::OUT_OF_RANGE,
                &self.path,
                format!(
                    "query {p}: the operator {op:?} applies to numeric fields, and {p} is {}; \
                     use * wildcards, | alternatives or ! for it",
                    kind_name(v),
                    p = self.path,
                ),
            ));
        };
        Ok(match *t {
            Term::Range(a, b) => a <= n && n <= b,
            Term::Cmp(CmpOp::Lt, x) => n < x,
            Term::Cmp(CmpOp::Le, x) => n <= x,
            Term::Cmp(CmpOp::Gt, x) => n > x,
            Term::Cmp(CmpOp::Ge, x) => n >= x,
            Term::Pattern(_) => false,
        })
    }
}

fn op_text(op: CmpOp) -> &'static str {
    match op {
        CmpOp::Lt => "<",
        CmpOp::Le => "<=",
        CmpOp::Gt => ">",
        CmpOp::Ge => ">=",
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Bool(_) => "a boolean",
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::Null => "null",
        Value::Number(_) => "a number",
    }
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The value at a dotted path (`None` when absent).
pub fn path_value<'a>(full: &'a Value, path: &str) -> Option<&'a Value> {
    let mut v = full;
    for p in path.split('.') {
        v = v.get(p)?;
    }
    Some(v)
}

/// `*` wildcards: `vol*`, `*500`, `v*5*0`; no `*`: exact.
pub fn glob(p: &str, v: &str) -> bool {
    let parts: Vec<&str> = p.split('*').collect();
    if parts.len() == 1 {
        return p == v;
    }
    let mut rest = v;
    for (i, part) in parts.iter().enumerate() {
        if i == 0 {
            let Some(r) = rest.strip_prefix(part) else {
                return false;
            };
            rest = r;
        } else if i == parts.len() - 1 {
            return rest.ends_with(part);
        } else {
            match rest.find(part) {
                Some(at) => rest = &rest[at + part.len()..],
                None => return false,
            }
        }
    }
    true
}

/// `?fields=`: keep `uuid`, `name` and the listed paths (`*` or `**`: everything).
pub fn project(full: &Value, fields: &[String]) -> Value {
    if fields.iter().any(|f| f == "*" || f == "**") {
        return full.clone();
    }
    let mut out = Map::new();
    for key in ["uuid", "name"] {
        if let Some(v) = full.get(key) {
            out.insert(key.into(), v.clone());
        }
    }
    for f in fields {
        let path: Vec<&str> = f.split('.').collect();
        insert_path(&mut out, full, &path);
    }
    Value::Object(out)
}

fn insert_path(out: &mut Map<String, Value>, full: &Value, path: &[&str]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let Some(v) = full.get(*first) else { return };
    if rest.is_empty() || !v.is_object() {
        out.insert(first.to_string(), v.clone());
        return;
    }
    let entry = out
        .entry(first.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = entry {
        insert_path(m, v, rest);
    }
}

fn unknown_param(k: &str, top: &[&str]) -> ApiError {
    ApiError::bad(
        code::UNKNOWN_FIELD,
        k,
        format!(
            "unknown query parameter {k:?}: filter by a field ({}), or use fields=, \
             max_records=, order_by=, return_records=",
            top.join(", ")
        ),
    )
}

/// Check the query's paths against the collection's top-level fields and parse filters.
pub fn filters(q: &Query, top: &[&str]) -> R<Vec<Filter>> {
    for (path, _) in &q.order_by {
        if !top.contains(&path.split('.').next().unwrap_or("")) {
            return Err(ApiError::bad(
                code::UNKNOWN_FIELD,
                "order_by",
                format!(
                    "order_by {path:?}: not a field of this collection ({})",
                    top.join(", ")
                ),
            ));
        }
    }
    q.filters
        .iter()
        .map(|(k, v)| {
            if !top.contains(&k.split('.').next().unwrap_or("")) {
                return Err(unknown_param(k, top));
            }
            Filter::parse(k, v)
        })
        .collect()
}

/// The records matching every filter, in the query's order (then by name, then uuid).
pub fn select(all: Vec<Value>, q: &Query, top: &[&str]) -> R<Vec<Value>> {
    let fs = filters(q, top)?;
    let mut out = Vec::with_capacity(all.len());
    for r in all {
        let mut keep = true;
        for f in &fs {
            if !f.matches(&r)? {
                keep = false;
                break;
            }
        }
        if keep {
            out.push(r);
        }
    }
    if !q.order_by.is_empty() {
        out.sort_by(|a, b| {
            for (path, desc) in &q.order_by {
                let o = cmp_values(path_value(a, path), path_value(b, path));
                let o = if *desc { o.reverse() } else { o };
                if o != Ordering::Equal {
                    return o;
                }
            }
            Ordering::Equal
        });
    }
    Ok(out)
}

/// Numbers numerically, everything else by text; absent values last.
fn cmp_values(a: Option<&Value>, b: Option<&Value>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(a), Some(b)) => match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x.partial_cmp(&y).unwrap_or(Ordering::Equal),
            _ => value_text(a).cmp(&value_text(b)),
        },
    }
}

/// A collection reply: the page of `records` (projected), `num_records`, and
/// `_links.next` when `max_records` cut the list short.
pub fn page(selected: Vec<Value>, q: &Query, collection: &str) -> R<Value> {
    let start = if q.start.is_empty() {
        0
    } else {
        let at = |r: &Value| {
            q.start
                .iter()
                .all(|(p, v)| path_value(r, p).map(value_text).as_deref() == Some(v.as_str()))
        };
        selected.iter().position(at).ok_or_else(|| {
            let cursor: Vec<String> = q
                .start
                .iter()
                .map(|(p, v)| format!("start.{p}={v}"))
                .collect();
            ApiError::bad(
                code::OUT_OF_RANGE,
                &format!("start.{}", q.start[0].0),
                format!(
                    "{}: the record this page starts at no longer matches the query (deleted \
                     or changed); list again from the start",
                    cursor.join("&")
                ),
            )
        })?
    };
    let total = selected.len() - start;
    let n = q.max_records.map_or(total, |m| m.min(total));
    let next = selected
        .get(start + n)
        .and_then(cursor_key)
        .map(|key| next_link(collection, &q.raw, &key));
    let mut body = Map::new();
    if q.return_records {
        let records: Vec<Value> = selected
            .into_iter()
            .skip(start)
            .take(n)
            .map(|r| project(&r, &q.fields))
            .collect();
        body.insert("records".into(), Value::Array(records));
        body.insert("num_records".into(), json!(n));
    } else {
        body.insert("num_records".into(), json!(total));
    }
    if let Some(href) = next {
        body.insert("_links".into(), json!({"next": {"href": href}}));
    }
    Ok(Value::Object(body))
}

/// The key a page can start at: a record's `uuid`; in collections without one, its `id`
/// (export policies), its LUN's and igroup's uuids (LUN maps), or its `name` (initiators,
/// S3 users).
fn cursor_key(r: &Value) -> Option<Vec<(&'static str, String)>> {
    let text = |p: &str| path_value(r, p).filter(|v| !v.is_null()).map(value_text);
    for key in [
        &["uuid"][..],
        &["id"],
        &["lun.uuid", "igroup.uuid"],
        &["name"],
    ] {
        let vals: Option<Vec<(&'static str, String)>> =
            key.iter().map(|p| text(p).map(|v| (*p, v))).collect();
        if vals.is_some() {
            return vals;
        }
    }
    None
}

/// The same query with the cursor set to `key`.
fn next_link(collection: &str, raw: &str, key: &[(&str, String)]) -> String {
    let mut parts: Vec<String> = raw
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("start."))
        .map(str::to_string)
        .collect();
    for (p, v) in key {
        parts.push(format!("start.{p}={}", urlencoding::encode(v)));
    }
    format!("{collection}?{}", parts.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str) -> Query {
        parse_query(s).unwrap()
    }

    fn names(v: &[Value]) -> Vec<&str> {
        v.iter().map(|r| r["name"].as_str().unwrap()).collect()
    }

    fn recs() -> Vec<Value> {
        vec![
            json!({"uuid": "1", "name": "epic_rhel1_a", "size": 100, "svm": {"name": "epic"}}),
            json!({"uuid": "2", "name": "epic_rhel2_a", "size": 2000, "svm": {"name": "epic"}}),
            json!({"uuid": "3", "name": "other", "size": 50, "shared": true}),
        ]
    }

    const TOP: &[&str] = &["uuid", "name", "size", "svm", "shared"];

    fn sel(s: &str) -> R<Vec<String>> {
        select(recs(), &q(s), TOP).map(|v| names(&v).into_iter().map(String::from).collect())
    }

    #[test]
    fn operators() {
        assert_eq!(
            sel("name=epic_*").unwrap(),
            ["epic_rhel1_a", "epic_rhel2_a"]
        );
        assert_eq!(
            sel("name=*rhel1*|other").unwrap(),
            ["epic_rhel1_a", "other"]
        );
        assert_eq!(sel("name=!epic_*").unwrap(), ["other"]);
        assert_eq!(sel("name=!other|!epic_rhel1_a").unwrap(), ["epic_rhel2_a"]);
        assert_eq!(sel("size=%3E99").unwrap(), ["epic_rhel1_a", "epic_rhel2_a"]);
        assert_eq!(sel("size=>=100").unwrap(), ["epic_rhel1_a", "epic_rhel2_a"]);
        assert_eq!(sel("size=<100").unwrap(), ["other"]);
        assert_eq!(sel("size=<=100").unwrap(), ["epic_rhel1_a", "other"]);
        assert_eq!(sel("size=50..100").unwrap(), ["epic_rhel1_a", "other"]);
        assert_eq!(sel("size=2000").unwrap(), ["epic_rhel2_a"]);
        assert_eq!(sel("svm.name=epic&size=>150").unwrap(), ["epic_rhel2_a"]);
        assert_eq!(sel("shared=true").unwrap(), ["other"]);
        // An absent field matches no positive term.
        assert_eq!(sel("shared=*").unwrap(), ["other"]);
    }

    #[test]
    fn operators_that_cannot_apply_are_400s_naming_them() {
        let e = sel("name=>a").unwrap_err();
        assert_eq!((e.status, e.target.as_str()), (400, "name"));
        assert!(e.message.contains("\">\""), "{}", e.message);
        let e = sel("name=1..5").unwrap_err();
        assert!(e.message.contains("\"..\""), "{}", e.message);
        let e = sel("size=>big").unwrap_err();
        assert!(e.message.contains("needs a number"), "{}", e.message);
        let e = sel("colour=red").unwrap_err();
        assert_eq!((e.status, e.target.as_str()), (400, "colour"));
        assert!(parse_query("max_records=0").is_err());
        assert!(parse_query("return_records=maybe").is_err());
        assert!(parse_query("order_by=name sideways").is_err());
        assert!(sel("order_by=colour").is_err());
    }

    #[test]
    fn order_and_pages() {
        assert_eq!(
            sel("order_by=size desc").unwrap(),
            ["epic_rhel2_a", "epic_rhel1_a", "other"]
        );
        assert_eq!(
            sel("order_by=name").unwrap(),
            ["epic_rhel1_a", "epic_rhel2_a", "other"]
        );
        let query = q("order_by=size&max_records=2&fields=size");
        let all = select(recs(), &query, TOP).unwrap();
        let p1 = page(all.clone(), &query, "/api/x").unwrap();
        assert_eq!(p1["num_records"], 2);
        assert_eq!(
            p1["records"][0],
            json!({"uuid": "3", "name": "other", "size": 50})
        );
        let next = p1["_links"]["next"]["href"].as_str().unwrap();
        assert_eq!(
            next,
            "/api/x?order_by=size&max_records=2&fields=size&start.uuid=2"
        );
        let q2 = q(next.split_once('?').unwrap().1);
        let p2 = page(select(recs(), &q2, TOP).unwrap(), &q2, "/api/x").unwrap();
        assert_eq!(p2["num_records"], 1);
        assert_eq!(p2["records"][0]["name"], "epic_rhel2_a");
        assert!(p2.get("_links").is_none());
        let count = q("return_records=false&name=epic*");
        let c = page(select(recs(), &count, TOP).unwrap(), &count, "/api/x").unwrap();
        assert_eq!(c, json!({"num_records": 2}));
        let gone = q("start.uuid=9");
        assert!(page(recs(), &gone, "/api/x").is_err());
    }

    /// Records without a uuid page on their own key: an export policy's `id`, a LUN map's
    /// LUN and igroup, an initiator's `name` (their lists lost every record past
    /// `max_records`: no `_links.next` was made without a uuid).
    #[test]
    fn pages_of_records_without_a_uuid() {
        let follow = |all: Vec<Value>, first: &str| -> Vec<Vec<Value>> {
            let mut pages = Vec::new();
            let mut query = q(first);
            loop {
                let p = page(
                    select(all.clone(), &query, &["id", "name", "lun", "igroup"]).unwrap(),
                    &query,
                    "/api/x",
                )
                .unwrap();
                pages.push(p["records"].as_array().unwrap().clone());
                match p["_links"]["next"]["href"].as_str() {
                    Some(h) => query = q(h.split_once('?').unwrap().1),
                    None => return pages,
                }
            }
        };
        let policies = vec![
            json!({"id": 1, "name": "default"}),
            json!({"id": 4, "name": "k8s"}),
            json!({"id": 7, "name": "lab"}),
        ];
        let pages = follow(policies, "max_records=2");
        assert_eq!(pages.len(), 2, "{pages:?}");
        assert_eq!(pages[1], [json!({"name": "lab"})]);
        let maps = vec![
            json!({"lun": {"uuid": "l1"}, "igroup": {"uuid": "g1"}, "logical_unit_number": 0}),
            json!({"lun": {"uuid": "l1"}, "igroup": {"uuid": "g2"}, "logical_unit_number": 1}),
        ];
        let pages = follow(maps, "max_records=1&fields=logical_unit_number");
        let numbers: Vec<&Value> = pages.iter().map(|p| &p[0]["logical_unit_number"]).collect();
        assert_eq!(numbers, [&json!(0), &json!(1)]);
        // A key is percent-encoded in the link (`+` would read as a space).
        let names = vec![
            json!({"name": "iqn.2026-01.x:a"}),
            json!({"name": "n+1 &x"}),
        ];
        let pages = follow(names, "max_records=1");
        assert_eq!(pages[1], [json!({"name": "n+1 &x"})]);
        let p = page(vec![json!({"id": 1})], &q("start.id=2"), "/api/x").unwrap_err();
        assert_eq!((p.status, p.target.as_str()), (400, "start.id"), "{p:?}");
    }

    #[test]
    fn decoding_projection_and_globs() {
        assert_eq!(percent_decode("a%2Cb+c%"), "a,b c%");
        assert_eq!(percent_decode("%zz"), "%zz");
        let full = json!({"uuid": "u", "name": "n", "qos": {"policy": {"name": "p", "uuid": "q"}}, "size": 5});
        assert_eq!(project(&full, &[]), json!({"uuid": "u", "name": "n"}));
        assert_eq!(
            project(&full, &["qos.policy.name".into()]),
            json!({"uuid": "u", "name": "n", "qos": {"policy": {"name": "p"}}})
        );
        assert_eq!(project(&full, &["*".into()]), full);
        assert!(glob("vol*", "vol500"));
        assert!(glob("*500", "vol500"));
        assert!(!glob("vol", "vol500"));
        assert!(glob("v*5*0", "vol500"));
    }
}
