//! ONTAP clustershell syntax: words, command-name abbreviation (unique prefixes, as the
//! shell accepts `vol` for `volume`), `-parameter value` pairs (parameter names may be
//! abbreviated too), positional values for the leading parameters, and the shell's own
//! error messages.

/// A clustershell error, printed as `Error: ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellError(pub String);

impl std::fmt::Display for ShellError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Error: {}", self.0)
    }
}

impl std::error::Error for ShellError {}

pub fn err<T>(msg: impl Into<String>) -> Result<T, ShellError> {
    Err(ShellError(msg.into()))
}

/// Split a command line into words: whitespace separates, double quotes group (and make
/// query characters literal, as in the shell).
pub fn words(line: &str) -> Result<Vec<String>, ShellError> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    if quoted {
        return err("unmatched quote (\") in the command line");
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

/// A command's parameter.
pub struct Param {
    pub name: &'static str,
    pub required: bool,
    /// Filled by a value given without `-name`, in declaration order.
    pub positional: bool,
}

pub const fn req(name: &'static str) -> Param {
    Param {
        name,
        required: true,
        positional: true,
    }
}

pub const fn opt(name: &'static str) -> Param {
    Param {
        name,
        required: false,
        positional: false,
    }
}

/// Parameters as given: (name, value) in command-line order.
#[derive(Debug, Default)]
pub struct Given(pub Vec<(&'static str, String)>);

impl Given {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Parse `-name value` pairs (and positional values) against a command's parameters.
pub fn params(args: &[String], spec: &[Param]) -> Result<Given, ShellError> {
    let mut given = Given::default();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let named = a.len() > 1 && a.starts_with('-') && a[1..].starts_with(char::is_alphabetic);
        let p = if named {
            let key = &a[1..];
            let exact = spec.iter().find(|p| p.name == key);
            let matches: Vec<&Param> = spec.iter().filter(|p| p.name.starts_with(key)).collect();
            match (exact, matches.len()) {
                (Some(p), _) => p,
                (None, 1) => matches[0],
                (None, 0) => {
                    return err(format!(
                        "invalid argument \"{a}\"{}",
                        did_you_mean(key, spec.iter().map(|p| p.name), "-")
                    ))
                }
                (None, _) => {
                    let names: Vec<String> =
                        matches.iter().map(|p| format!("-{}", p.name)).collect();
                    return err(format!(
                        "Ambiguous argument \"{a}\". Possible matches include: {}",
                        names.join(" ")
                    ));
                }
            }
        } else {
            match spec
                .iter()
                .find(|p| p.positional && given.get(p.name).is_none())
            {
                Some(p) => {
                    given.0.push((p.name, a.clone()));
                    i += 1;
                    continue;
                }
                None => return err(format!("invalid argument \"{a}\"")),
            }
        };
        if given.get(p.name).is_some() {
            return err(format!(
                "parameter \"-{}\" is specified more than once",
                p.name
            ));
        }
        let looks_named = |v: &&String| {
            v.len() > 1 && v.starts_with('-') && v[1..].starts_with(char::is_alphabetic)
        };
        let Some(v) = args.get(i + 1).filter(|v| !looks_named(v)) else {
            return err(format!("parameter \"-{}\" needs a value", p.name));
        };
        given.0.push((p.name, v.clone()));
        i += 2;
    }
    for p in spec.iter().filter(|p| p.required) {
        if given.get(p.name).is_none() {
            return err(format!("Missing required parameter \"-{}\"", p.name));
        }
    }
    Ok(given)
}

/// `; did you mean "PREFIXname"?` for the name of `names` closest to a mistyped `word`
/// (Jaro-Winkler similarity over 0.8), else nothing.
pub fn did_you_mean<'a>(word: &str, names: impl Iterator<Item = &'a str>, prefix: &str) -> String {
    names
        .map(|n| (strsim::jaro_winkler(word, n), n))
        .filter(|(score, _)| *score > 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| format!("; did you mean \"{prefix}{n}\"?"))
        .unwrap_or_default()
}

/// Resolve `word` among `choices` by exact match or unique prefix.
pub fn pick<'a>(word: &str, choices: &[&'a str], context: &str) -> Result<&'a str, ShellError> {
    if let Some(c) = choices.iter().find(|c| **c == word) {
        return Ok(c);
    }
    let m: Vec<&&str> = choices.iter().filter(|c| c.starts_with(word)).collect();
    match m.len() {
        1 => Ok(m[0]),
        0 => err(format!(
            "\"{word}\" is not a recognized command{context}{}",
            did_you_mean(word, choices.iter().copied(), "")
        )),
        _ => err(format!(
            "Ambiguous command \"{word}\". Possible matches include: {}",
            m.iter()
                .map(|s| s.to_string())
                .collect::<Vec<_>>()
                .join(" ")
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        words(s).unwrap()
    }

    const SPEC: &[Param] = &[
        req("policy-group"),
        opt("vserver"),
        opt("peak-iops"),
        opt("peak-iops-allocation"),
        opt("expected-iops"),
    ];

    #[test]
    fn words_and_quotes() {
        assert_eq!(
            w("  vol modify -volume  a* "),
            ["vol", "modify", "-volume", "a*"]
        );
        assert_eq!(
            w("show -comment \"two words\""),
            ["show", "-comment", "two words"]
        );
        assert!(words("a \"b").is_err());
    }

    #[test]
    fn parameters() {
        let g = params(
            &w("-policy-group aQoS -peak-iops 50IOPS/GB -peak-iops-allocation allocated-space"),
            SPEC,
        )
        .unwrap();
        assert_eq!(g.get("peak-iops"), Some("50IOPS/GB"));
        assert_eq!(g.get("peak-iops-allocation"), Some("allocated-space"));
        // Positional, and abbreviated names.
        let g = params(&w("aQoS -vs nfs_svm -exp 5"), SPEC).unwrap();
        assert_eq!(g.get("policy-group"), Some("aQoS"));
        assert_eq!(g.get("vserver"), Some("nfs_svm"));
        assert_eq!(g.get("expected-iops"), Some("5"));
        let e = |s: &str| params(&w(s), SPEC).unwrap_err().to_string();
        assert_eq!(
            e("-policy-group a -bogus 1"),
            "Error: invalid argument \"-bogus\""
        );
        assert!(e("-policy-group a -peak 1").contains("Ambiguous argument \"-peak\""));
        // A typo gets the parameter it was closest to.
        assert_eq!(
            e("-policy-group a -vsrever v"),
            "Error: invalid argument \"-vsrever\"; did you mean \"-vserver\"?"
        );
        assert_eq!(
            e("-vserver v"),
            "Error: Missing required parameter \"-policy-group\""
        );
        assert!(e("-policy-group a -vserver").contains("needs a value"));
        assert!(e("-policy-group a -vserver x -vserver y").contains("more than once"));
        // Seed 001's PDF-broken line: the stray word is named.
        assert_eq!(
            e("-policy-group aqos- epic-prod1"),
            "Error: invalid argument \"epic-prod1\""
        );
        // A negative number is a value, not a parameter.
        assert_eq!(
            params(&w("-policy-group -5"), SPEC)
                .unwrap()
                .get("policy-group"),
            Some("-5")
        );
    }

    #[test]
    fn command_words() {
        assert_eq!(
            pick("shwo", &["create", "show"], " under \"qos policy-group\"")
                .unwrap_err()
                .to_string(),
            "Error: \"shwo\" is not a recognized command under \"qos policy-group\"; did you mean \"show\"?"
        );
        assert_eq!(pick("vol", &["volume", "vserver"], "").unwrap(), "volume");
        assert_eq!(pick("qos", &["qos", "qosx"], "").unwrap(), "qos");
        assert!(pick("v", &["volume", "vserver"], "")
            .unwrap_err()
            .0
            .contains("Ambiguous"));
        assert_eq!(
            pick("foo", &["volume"], "").unwrap_err().to_string(),
            "Error: \"foo\" is not a recognized command"
        );
    }
}
