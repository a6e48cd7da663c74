//! A plan's raw fio options (a `fio = { ... }` table): each checked by the name fio will
//! read against the allow-list of workload options ([`fio::options`]), each value by its
//! grammar, with the plan's line. A plan is data that may come from someone else: by
//! default it says what to measure, never where or what to run; options that name a path
//! or run a program, and any option not on the list, are refused unless `qoslab bench
//! --allow-any-fio-option` ([`PlanSource::any_fio_option`]).

use std::collections::BTreeMap;

use fio::options::{self, Refusal};
use toml::Spanned;

use super::{PlanError, PlanSource};

/// A `fio = { ... }` table as written, every value with its place in the plan (a TOML
/// value starts on its key's line; keys of dotted tables carry no place of their own).
pub type FioTable = BTreeMap<String, Spanned<toml::Value>>;

/// The flag that lets a plan set any fio option.
pub const ANY_OPTION_FLAG: &str = "--allow-any-fio-option";

/// A key as TOML would need it written (bare when it can be, else quoted).
fn shown(key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        key.to_string()
    } else {
        format!("{key:?}")
    }
}

/// A value as it goes in the job file (booleans as 1/0), or why it cannot.
fn job_value(v: &toml::Value) -> Option<String> {
    match v {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        toml::Value::Boolean(b) => Some(u8::from(*b).to_string()),
        _ => None,
    }
}

/// The options of a `fio` table, in the plan's order, each checked (`ctx` starts messages:
/// `workload "w": `). Options on the list have their values parsed; others pass only with
/// [`PlanSource::any_fio_option`], as written.
pub fn options(
    src: &PlanSource,
    table: &FioTable,
    ctx: &str,
) -> Result<Vec<(String, String)>, PlanError> {
    let mut entries: Vec<(&String, &Spanned<toml::Value>)> = table.iter().collect();
    entries.sort_by_key(|(_, v)| v.span().start);
    let mut out: Vec<(String, String)> = Vec::new();
    let mut seen: BTreeMap<&'static str, String> = BTreeMap::new();
    for (k, v) in entries {
        let key = k;
        let at = src.at(v.span().start);
        let name = format!("{ctx}fio.{}", shown(key));
        let value = job_value(v.get_ref()).ok_or_else(|| {
            PlanError(format!(
                "{at}: {name}: allowed values: a string, number or boolean"
            ))
        })?;
        if let Err(r) = options::check(key, &value, src.any_fio_option) {
            return Err(PlanError(format!(
                "{at}: {}{}",
                refusal(&name, &value, &r),
                hint(key, &value, &r)
            )));
        }
        if !fio::jobfile::valid_value(&value) {
            return Err(PlanError(format!(
                "{at}: {name} = {value:?}: must be one line without ';', '#' or a leading '['"
            )));
        }
        if let Some(o) = options::listed(key) {
            if let Some(first) = seen.insert(o.name, key.clone()) {
                return Err(PlanError(format!(
                    "{at}: {name}: {} is set twice ({first} and {key} are the same fio option)",
                    o.name
                )));
            }
        }
        out.push((key.clone(), value));
    }
    if !out
        .iter()
        .any(|(k, _)| options::listed(k).is_some_and(|o| o.name == "rw"))
    {
        return Err(PlanError(format!(
            "{}: {ctx}fio: needs rw (read, write, randread, randwrite, rw, randrw, ...)",
            src.origin
        )));
    }
    Ok(out)
}

/// The closest of `candidates` to `word`, if it is close (a typo, not another word).
fn closest<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .map(|c| (strsim::jaro_winkler(word, c), c))
        .filter(|(score, _)| *score > 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// "; did you mean X?" for a misspelt option name or word.
fn hint(key: &str, value: &str, r: &Refusal) -> String {
    let found = match r {
        Refusal::Unlisted => closest(key, options::LISTED.iter().map(|o| o.name)),
        Refusal::Value { .. } => {
            let words: &[&str] = match options::listed(key).map(|o| o.value) {
                Some(options::Value::OneOf(w)) => w,
                Some(options::Value::RwMode) => options::values::RW_MODES,
                _ => &[],
            };
            closest(value, words.iter().copied())
        }
        _ => None,
    };
    found
        .map(|f| format!("; did you mean {f}?"))
        .unwrap_or_default()
}

/// A refusal in words: what, why, and what to write instead.
fn refusal(name: &str, value: &str, r: &Refusal) -> String {
    match r {
        Refusal::Spelling { fio_reads } => {
            let also = match options::dangerous(fio_reads) {
                Some(why) => format!(": {why}"),
                None => String::new(),
            };
            format!(
                "{name}: fio reads this name as {fio_reads:?} (it drops white space and control \
                 characters around a name){also}; write option names plainly"
            )
        }
        Refusal::Owned { instead } => format!("{name}: qoslab sets this; use {instead}"),
        Refusal::Dangerous { why } => format!(
            "{name} = {value:?}: {why}; a plan sets options that name a path or run a program \
             only with `qoslab bench {ANY_OPTION_FLAG}`"
        ),
        Refusal::Unlisted => format!(
            "{name}: not an option a plan may set (a plan sets the workload options qoslab \
             knows, by name, since others may name a path or run a program): {}; `qoslab bench \
             {ANY_OPTION_FLAG}` passes any fio option as written",
            options::listed_names()
        ),
        Refusal::Value { expected } => format!("{name} = {value:?}: expected {expected}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct W {
        workload: Vec<Raw>,
    }
    #[derive(Deserialize)]
    struct Raw {
        fio: FioTable,
    }

    fn parse(text: &str, any: bool) -> Result<Vec<(String, String)>, String> {
        let src = PlanSource::new(text, "p.toml").allowing_any_fio_option(any);
        let w: W = src.deserialize().map_err(|e| e.0)?;
        options(&src, &w.workload[0].fio, "workload \"w\": ").map_err(|e| e.0)
    }

    fn err(text: &str) -> String {
        parse(text, false).unwrap_err()
    }

    #[test]
    fn every_spelling_of_a_command_option_is_refused_at_its_line() {
        for key in [
            "exec_prerun",
            "\" exec_prerun\"",
            "\"exec_prerun \"",
            "\"exec_prerun\\t\"",
            "\"exec_prerun\\u000b\"",
            "\"\\u000bexec_prerun\"",
            "'exec_prerun '",
            "\"exec_prerun\\u0000\"",
        ] {
            let inline = format!(
                "[[workload]]\nfio = {{ rw = \"randread\", bs = \"4k\", size = \"4M\", {key} = \"touch /tmp/x\" }}\n"
            );
            let e = err(&inline);
            assert!(
                e.starts_with("p.toml:2: workload \"w\": fio."),
                "{key}: {e}"
            );
            assert!(e.contains("shell command"), "{key}: {e}");
            // As a table of its own, and as a dotted key.
            let table = format!(
                "[[workload]]\n[workload.fio]\nrw = \"randread\"\n\n{key} = \"touch /tmp/x\"\n"
            );
            assert!(
                err(&table).starts_with("p.toml:5: "),
                "{key}: {}",
                err(&table)
            );
            let dotted = format!("[[workload]]\nfio.rw = \"read\"\nfio.{key} = \"x\"\n");
            assert!(
                err(&dotted).starts_with("p.toml:3: "),
                "{key}: {}",
                err(&dotted)
            );
        }
        // Plainly written, the flag lets it through; disguised, never.
        let plain = "[[workload]]\nfio = { rw = \"read\", exec_prerun = \"true\" }\n";
        assert!(err(plain).contains(ANY_OPTION_FLAG), "{}", err(plain));
        assert!(parse(plain, true).is_ok());
        let disguised = "[[workload]]\nfio = { rw = \"read\", \" exec_prerun\" = \"true\" }\n";
        assert!(parse(disguised, true).is_err());
    }

    #[test]
    fn engines_paths_and_logs_are_refused_and_values_parsed() {
        for (opt, says) in [
            (
                " \" ioengine\" = \"exec\", program = \"/usr/bin/touch\"",
                "fio reads this name as \"ioengine\"",
            ),
            ("ioengine = \"exec\"", "runs a program"),
            ("program = \"/usr/bin/touch\"", "the exec engine runs it"),
            (
                "\" filename\" = \"/some/other/file\"",
                "fio reads this name as \"filename\"",
            ),
            ("filename = \"/some/other/file\"", "the target does"),
            ("write_iolog = \"/any/path\"", "writes a file at a path"),
            ("read_iolog = \"/any/path\"", "reads a file"),
            ("cgroup = \"x\"", "cgroup"),
            ("iodeth = 16", "did you mean iodepth?"),
            ("rate_iosp = 16", "did you mean rate_iops?"),
            ("nice = 5", "not an option a plan may set"),
            (
                "runtime = \"5s\"",
                "qoslab sets this; use the workload's or [bench]'s runtime key",
            ),
            ("bs = \"4kk\"", "bs = \"4kk\": expected a size"),
            ("bs = \"4KiB\"", "4,000 bytes"),
            ("iodepth = 0", "expected a whole number from 1"),
            ("size = \"${HOME}\"", "expected a size"),
            ("readwrite = \"read\"", "rw is set twice"),
        ] {
            let e = err(&format!(
                "[bench]\n\n[[workload]]\nfio = {{ rw = \"write\", {opt} }}\n"
            ));
            assert!(e.starts_with("p.toml:4: workload \"w\": fio"), "{opt}: {e}");
            assert!(e.contains(says), "{opt}: {e}");
        }
        assert!(err("[[workload]]\nfio = { bs = \"4k\" }\n").contains("needs rw"));
        let e = err("[[workload]]\nfio = { rw = \"randwrit\" }\n");
        assert!(
            e.contains("fio.rw = \"randwrit\": expected one of read, write")
                && e.ends_with("; did you mean randwrite?"),
            "{e}"
        );
        let ok = parse(
            "[[workload]]\nfio = { rw = \"randrw\", bs = \"4k\", rwmixread = 75, direct = true, size = 1048576, ioengine = \"io_uring\" }\n",
            false,
        )
        .unwrap();
        assert_eq!(
            ok,
            [
                ("rw", "randrw"),
                ("bs", "4k"),
                ("rwmixread", "75"),
                ("direct", "1"),
                ("size", "1048576"),
                ("ioengine", "io_uring")
            ]
            .map(|(k, v)| (k.to_string(), v.to_string()))
        );
    }
}
