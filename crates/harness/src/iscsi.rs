//! fio over iSCSI: `--target iscsi://HOST[:PORT]/IQN/LUN` (any iSCSI target: qoslab's node
//! with `--listen-iscsi`, tgt, an array), through fio's `libiscsi` ioengine (its own TCP
//! session per job, no kernel initiator).
//!
//! A LUN holds a user's blocks like a block device: a plan that writes to one runs only
//! with `--overwrite` (the CLI's rule, `qoslab::bench_target`). fio logs in as
//! [`INITIATOR`], a stable name a target's LUN masking (ACLs, `initiators = [...]`) can
//! allow. CHAP is not taken from the URL yet: a secret on the command line is visible in
//! the process table.

use iscsi_proto::url::LunAddress;
/// The iSCSI port when the URL gives none (RFC 7143); the highest LUN number a URL may name.
pub use iscsi_proto::url::{DEFAULT_PORT, MAX_LUN};

/// The allowed form, for messages.
pub const FORM: &str = "iscsi://HOST[:PORT]/IQN/LUN";

/// The initiator name fio's libiscsi engine logs in with (fio's own default,
/// `iqn.2019-04.org.fio:fio`, names no one in particular): allow it in a target's LUN
/// masking to let `qoslab bench` see a LUN.
pub const INITIATOR: &str = "iqn.2026-01.lab.qoslab:bench";

/// An iSCSI target URL, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IscsiUrl {
    /// A host name or address (IPv6 without its brackets).
    pub host: String,
    pub port: Option<u16>,
    pub iqn: String,
    pub lun: u16,
}

impl IscsiUrl {
    /// Parse `iscsi://HOST[:PORT]/IQN/LUN` ([`LunAddress::parse`] after the harness's own
    /// refusals); the error names what is wrong and the form.
    pub fn parse(url: &str) -> Result<IscsiUrl, String> {
        let bad = |what: String| format!("{FORM}: {what}");
        let rest = url
            .strip_prefix("iscsi://")
            .ok_or_else(|| format!("an iSCSI target is {FORM}"))?;
        let (authority, _) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.contains('@') {
            return Err(format!(
                "a user and secret in the URL (USER%SECRET@HOST): CHAP from the harness is not \
                 supported yet (a secret on the command line is visible in the process table); \
                 give {FORM} of a target that does not ask for CHAP"
            ));
        }
        if rest.contains('?') {
            return Err(bad("no ?options are taken".into()));
        }
        if !fio::jobfile::valid_value(url) {
            return Err(bad("must be one line without ';' or '#'".into()));
        }
        let LunAddress {
            host,
            port,
            iqn,
            lun,
        } = LunAddress::parse(rest).map_err(|e| bad(e.to_string()))?;
        Ok(IscsiUrl {
            host,
            port,
            iqn,
            lun,
        })
    }

    /// `HOST:PORT` (the default port when the URL gives none).
    pub fn portal(&self) -> String {
        iscsi_proto::url::portal(&self.host, self.port.unwrap_or(DEFAULT_PORT))
    }

    /// "LUN 0 of iqn.... at HOST:PORT", for messages.
    pub fn describe(&self) -> String {
        format!("LUN {} of {} at {}", self.lun, self.iqn, self.portal())
    }
}

/// Check an iSCSI target URL ([`IscsiUrl::parse`]).
pub fn check_url(url: &str) -> Result<(), String> {
    IscsiUrl::parse(url).map(|_| ())
}

/// The URL as it may be shown: a user and secret before `@` hidden (a refused URL is
/// echoed in its error).
pub fn shown(url: &str) -> String {
    let Some(rest) = url.strip_prefix("iscsi://") else {
        return url.to_string();
    };
    let end = rest.find('/').unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("iscsi://(hidden)@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// fio options reaching the LUN at `url`: fio splits `filename` at `:`, so each is escaped.
pub fn options(url: &str) -> Vec<(String, String)> {
    vec![
        ("ioengine".into(), "libiscsi".into()),
        ("initiator".into(), INITIATOR.into()),
        ("filename".into(), url.replace(':', "\\:")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use iscsi_proto::url::valid_iscsi_name;

    #[test]
    fn urls_that_name_a_lun_parse() {
        let u =
            IscsiUrl::parse("iscsi://127.0.0.1:3261/iqn.2026-01.lab.qoslab:e2e-node/0").unwrap();
        assert_eq!(
            u,
            IscsiUrl {
                host: "127.0.0.1".into(),
                port: Some(3261),
                iqn: "iqn.2026-01.lab.qoslab:e2e-node".into(),
                lun: 0,
            }
        );
        assert_eq!(
            u.describe(),
            "LUN 0 of iqn.2026-01.lab.qoslab:e2e-node at 127.0.0.1:3261"
        );
        let u = IscsiUrl::parse("iscsi://array.example/naa.600a0980383030/16383").unwrap();
        assert_eq!((u.port, u.lun), (None, 16383));
        assert_eq!(u.portal(), "array.example:3260");
        let u = IscsiUrl::parse("iscsi://[::1]:3260/eui.0123456789ABCDEF/7").unwrap();
        assert_eq!(u.host, "::1");
        assert_eq!(u.portal(), "[::1]:3260");
        assert!(check_url("iscsi://[fe80::1]/iqn.2001-04.com.example:storage/1").is_ok());
    }

    #[test]
    fn each_wrong_url_is_named_with_the_form() {
        let iqn = "iqn.2026-01.lab.qoslab:n";
        for (url, want) in [
            (
                "nbd://h/x",
                "an iSCSI target is iscsi://HOST[:PORT]/IQN/LUN",
            ),
            (&format!("iscsi:///{iqn}/0"), "the host is missing"),
            (&format!("iscsi://:3260/{iqn}/0"), "the host is missing"),
            (
                &format!("iscsi://h_st/{iqn}/0"),
                "\"h_st\" is not a host name or address",
            ),
            (
                &format!("iscsi://h:0/{iqn}/0"),
                "port \"0\" is not a number from 1 to 65535",
            ),
            (
                &format!("iscsi://h:65536/{iqn}/0"),
                "port \"65536\" is not a number",
            ),
            (
                &format!("iscsi://h:+80/{iqn}/0"),
                "port \"+80\" is not a number",
            ),
            (&format!("iscsi://h:/{iqn}/0"), "port \"\" is not a number"),
            (
                &format!("iscsi://[::1/{iqn}/0"),
                "an IPv6 address's ] is missing",
            ),
            (
                &format!("iscsi://[zz]/{iqn}/0"),
                "[zz] is not an IPv6 address",
            ),
            (&format!("iscsi://[::1]80/{iqn}/0"), "\"80\" after [::1]"),
            ("iscsi://h", "the target's name (IQN) is missing"),
            ("iscsi://h//0", "the target's name (IQN) is missing"),
            (
                "iscsi://h/target1/0",
                "\"target1\" is not an iSCSI name (iqn.YYYY-MM",
            ),
            (&format!("iscsi://h/{iqn}"), "the LUN number is missing"),
            (&format!("iscsi://h/{iqn}/"), "the LUN number is missing"),
            (
                &format!("iscsi://h/{iqn}/16384"),
                "LUN \"16384\" is not a number from 0 to 16383",
            ),
            (&format!("iscsi://h/{iqn}/-1"), "LUN \"-1\" is not a number"),
            (&format!("iscsi://h/{iqn}/+1"), "LUN \"+1\" is not a number"),
            (&format!("iscsi://h/{iqn}/0/"), "\"/\" after the LUN"),
            (&format!("iscsi://h/{iqn}/0/x"), "\"/x\" after the LUN"),
            (
                &format!("iscsi://h/{iqn}/0?header_digest=crc32c"),
                "no ?options are taken",
            ),
            (
                &format!("iscsi://h/{iqn}/0;x"),
                "must be one line without ';' or '#'",
            ),
        ] {
            let e = check_url(url).expect_err(url);
            assert!(e.contains(want), "{url}: {e}");
            assert!(e.contains(FORM), "{url}: {e}");
        }
    }

    #[test]
    fn chap_in_the_url_is_refused_and_its_secret_never_shown() {
        let url = "iscsi://user%s3cret@127.0.0.1:3260/iqn.2026-01.lab.qoslab:n/0";
        let e = check_url(url).unwrap_err();
        assert!(
            e.contains("CHAP from the harness is not supported yet")
                && e.contains("visible in the process table"),
            "{e}"
        );
        assert!(!e.contains("s3cret"), "{e}");
        assert_eq!(
            shown(url),
            "iscsi://(hidden)@127.0.0.1:3260/iqn.2026-01.lab.qoslab:n/0"
        );
        let plain = "iscsi://127.0.0.1/iqn.2026-01.lab.qoslab:n/0";
        assert_eq!(shown(plain), plain);
    }

    #[test]
    fn fio_gets_the_engine_a_stable_initiator_and_escaped_colons() {
        let o = options("iscsi://127.0.0.1:3261/iqn.2026-01.lab.qoslab:e2e-node/0");
        assert_eq!(
            o,
            vec![
                ("ioengine".to_string(), "libiscsi".to_string()),
                ("initiator".to_string(), INITIATOR.to_string()),
                (
                    "filename".to_string(),
                    "iscsi\\://127.0.0.1\\:3261/iqn.2026-01.lab.qoslab\\:e2e-node/0".to_string()
                ),
            ]
        );
        assert!(valid_iscsi_name(INITIATOR));
    }
}
