//! fio options that run programs, refused in plans unless `qoslab bench --allow-exec`.
//!
//! From fio's HOWTO and source: `exec_prerun` and `exec_postrun` hand their value to
//! system(3); `ioengine=exec` runs `program` (execvp); `ioengine=external:PATH`, and any
//! `ioengine` value that names a path, is dlopen(3)ed (its code runs in fio). A plan is
//! data that may come from someone else: running it must not run their commands unless
//! asked. The check covers every table of the plan, so every family's fio options.

use super::{PlanError, PlanSource};

/// Options whose value is a command fio runs.
const COMMAND_OPTIONS: &[&str] = &["exec_prerun", "exec_postrun"];

/// Why an option = value runs a program, if it does.
fn runs_program(key: &str, value: &toml::Value) -> Option<&'static str> {
    if COMMAND_OPTIONS.contains(&key) {
        return Some("fio runs its value as a shell command");
    }
    if key == "ioengine" {
        let v = value.as_str().unwrap_or_default().trim();
        if v == "exec" {
            return Some("the exec engine runs the `program` option");
        }
        if v.starts_with("external") || v.contains('/') {
            return Some("fio loads the named shared object and runs its code");
        }
    }
    None
}

/// Every `KEY = VALUE` at any depth whose key and value run a program.
fn find(v: &toml::Value, path: &str, out: &mut Vec<(String, String, &'static str)>) {
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                if let Some(why) = runs_program(k, x) {
                    let shown = match x.as_str() {
                        Some(s) => format!("{s:?}"),
                        None => format!("{x:?}"),
                    };
                    out.push((p.clone(), shown, why));
                }
                find(x, &p, out);
            }
        }
        toml::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                find(x, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The 1-based line that sets `key` (at the start of an assignment, in a table or an
/// inline table) to a value starting with `value`; else the first that sets `key`.
fn line_of(text: &str, key: &str, value: &str) -> Option<usize> {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    let sets = |l: &str| {
        let l = l.split('#').next().unwrap_or("");
        l.match_indices(key).any(|(i, _)| {
            let before = l[..i].chars().next_back();
            !before.is_some_and(is_word) && l[i + key.len()..].trim_start().starts_with('=')
        })
    };
    let head: String = value.chars().take(24).collect();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .iter()
        .position(|l| sets(l) && l.contains(head.as_str()))
        .or_else(|| lines.iter().position(|l| sets(l)))
        .map(|i| i + 1)
}

/// Refuse a plan that sets fio options which run programs (unless `allow`).
pub fn check(src: &PlanSource, allow: bool) -> Result<(), PlanError> {
    if allow {
        return Ok(());
    }
    let doc: toml::Value = src.deserialize()?;
    let mut found = Vec::new();
    find(&doc, "", &mut found);
    let Some((path, value, why)) = found.first() else {
        return Ok(());
    };
    let key = path.rsplit('.').next().unwrap_or(path);
    let raw = value.trim_matches('"');
    let at = match line_of(src.text, key, raw) {
        Some(l) => format!("{}:{l}", src.origin),
        None => src.origin.to_string(),
    };
    let more = if found.len() > 1 {
        format!(
            " (and {} more: {})",
            found.len() - 1,
            found[1..]
                .iter()
                .map(|(p, _, _)| p.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )
    } else {
        String::new()
    };
    Err(PlanError(format!(
        "{at}: {path} = {value}: {why}; a plan runs fio options that execute programs only \
         with `qoslab bench --allow-exec`{more}"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> Option<String> {
        check(&PlanSource::new(text, "p.toml"), false)
            .err()
            .map(|e| e.0)
    }

    #[test]
    fn options_that_run_programs_are_named_with_their_line() {
        let plan = "[bench]\nname = \"x\"\n\n[[workload]]\nfio = { rw = \"read\", exec_prerun = \"touch /tmp/pwned\" }\n";
        let e = err(plan).unwrap();
        assert!(
            e.starts_with("p.toml:5: workload[0].fio.exec_prerun = \"touch /tmp/pwned\""),
            "{e}"
        );
        assert!(e.contains("--allow-exec"), "{e}");
        assert!(check(&PlanSource::new(plan, "p.toml"), true).is_ok());
        let e = err("[[workload]]\n[workload.fio]\nrw = \"read\"\nexec_postrun = \"x\"\n").unwrap();
        assert!(
            e.starts_with("p.toml:4: workload[0].fio.exec_postrun"),
            "{e}"
        );
        let e = err("[[workload]]\nfio = { rw = \"read\" }\n[[workload]]\nfio = { rw = \"read\", ioengine = \"exec\", program = \"/bin/sh\" }\n").unwrap();
        assert!(
            e.starts_with("p.toml:4: workload[1].fio.ioengine = \"exec\""),
            "{e}"
        );
        let e = err("[[workload]]\nfio = { rw = \"read\", ioengine = \"external:/tmp/e.so\" }\n")
            .unwrap();
        assert!(e.contains("shared object"), "{e}");
        assert!(err("[[workload]]\nfio = { rw = \"read\", ioengine = \"./evil.so\" }\n").is_some());
        // Ordinary engines and look-alike text pass.
        assert_eq!(
            err("[[workload]]\nname = \"exec_prerun\"\nfio = { rw = \"read\", ioengine = \"libaio\" }\n"),
            None
        );
    }
}
