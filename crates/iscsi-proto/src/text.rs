//! Text key=value pairs (RFC 7143 §6.1): UTF-8 `key=value` strings, each ended by a
//! NUL, in Login and Text PDUs' data segments (joined across PDUs sent with C=1).

/// Longest key name (RFC 7143 §6.1: 63 bytes).
pub const MAX_KEY: usize = 63;
/// Longest value accepted. Standard values are at most 255 bytes; CHAP's binary values
/// (hex or base64) may be longer, bounded here well above any real challenge.
pub const MAX_VALUE: usize = 8192;
/// Most text bytes accepted in one negotiation step (all its continuation PDUs).
pub const MAX_TEXT: usize = 64 * 1024;

#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum TextError {
    #[error("text pair {0:?} has no '='")]
    NoEquals(String),
    #[error("key {key:?} is longer than {MAX_KEY} bytes")]
    KeyTooLong { key: String },
    #[error("value of {key} is {len} bytes, longer than {MAX_VALUE}")]
    ValueTooLong { key: String, len: usize },
    #[error("key or value is not UTF-8")]
    NotUtf8,
    #[error("key {0:?} is empty or has characters outside RFC 7143's key set")]
    BadKey(String),
}

fn clip(s: &str) -> String {
    s.chars().take(40).collect()
}

/// Splits a data segment into pairs. A trailing pair without its NUL is accepted (the
/// last PDU of a sequence), an empty segment gives no pairs.
pub fn parse(data: &[u8]) -> Result<Vec<(&str, &str)>, TextError> {
    let mut pairs = Vec::new();
    for raw in data.split(|&b| b == 0) {
        if raw.is_empty() {
            continue;
        }
        let s = std::str::from_utf8(raw).map_err(|_| TextError::NotUtf8)?;
        let (k, v) = s
            .split_once('=')
            .ok_or_else(|| TextError::NoEquals(clip(s)))?;
        if k.len() > MAX_KEY {
            return Err(TextError::KeyTooLong { key: clip(k) });
        }
        if k.is_empty()
            || !k
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b".-+@_".contains(&c))
        {
            return Err(TextError::BadKey(clip(k)));
        }
        if v.len() > MAX_VALUE {
            return Err(TextError::ValueTooLong {
                key: k.to_string(),
                len: v.len(),
            });
        }
        pairs.push((k, v));
    }
    Ok(pairs)
}

/// Appends `key=value` and its NUL.
pub fn push(out: &mut Vec<u8>, key: &str, value: &str) {
    out.extend_from_slice(key.as_bytes());
    out.push(b'=');
    out.extend_from_slice(value.as_bytes());
    out.push(0);
}

/// Values a responder answers with instead of a value.
pub const REJECT: &str = "Reject";
pub const IRRELEVANT: &str = "Irrelevant";
pub const NOT_UNDERSTOOD: &str = "NotUnderstood";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs() {
        let p = parse(b"InitiatorName=iqn.a:b\0SessionType=Normal\0\0X-foo=a=b").unwrap();
        assert_eq!(
            p,
            [
                ("InitiatorName", "iqn.a:b"),
                ("SessionType", "Normal"),
                ("X-foo", "a=b")
            ]
        );
        assert_eq!(parse(b"").unwrap(), []);
        assert!(matches!(parse(b"novalue\0"), Err(TextError::NoEquals(_))));
        assert!(matches!(parse(b"=v\0"), Err(TextError::BadKey(_))));
        assert!(matches!(parse(b"a b=v\0"), Err(TextError::BadKey(_))));
        assert!(matches!(
            parse(&[b'k', b'=', 0xff]),
            Err(TextError::NotUtf8)
        ));
        let long = format!("{}=1", "k".repeat(64));
        assert!(matches!(
            parse(long.as_bytes()),
            Err(TextError::KeyTooLong { .. })
        ));
        let mut out = Vec::new();
        push(&mut out, "HeaderDigest", "None");
        assert_eq!(out, b"HeaderDigest=None\0");
    }
}
