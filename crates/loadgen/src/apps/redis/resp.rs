//! The subset of RESP2 the redis workload speaks: commands as arrays of bulk strings,
//! replies parsed into [`Reply`]. (The `redis` crate would do it, but pulls in `url`/`idna`
//! and more for the four commands used here; this is tested against a real redis-server.)

use std::io::{self, BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

/// Append one command to `out` in RESP2.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn bad(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn line<R: BufRead>(r: &mut R) -> io::Result<String> {
    let mut buf = Vec::new();
    r.read_until(b'\n', &mut buf)?;
    if buf.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "connection closed by redis",
        ));
    }
    if !buf.ends_with(b"\r\n") {
        return Err(bad("reply line without CRLF".into()));
    }
    buf.truncate(buf.len() - 2);
    String::from_utf8(buf).map_err(|_| bad("reply line is not UTF-8".into()))
}

/// Parse one reply.
pub fn parse<R: BufRead>(r: &mut R) -> io::Result<Reply> {
    let l = line(r)?;
    // Split after the first character (not byte: a hostile reply may start with any).
    let first = l.chars().next().map(char::len_utf8).unwrap_or(0);
    let (kind, rest) = l.split_at(first);
    let num =
        |s: &str| -> io::Result<i64> { s.parse().map_err(|_| bad(format!("bad length {s:?}"))) };
    match kind {
        "+" => Ok(Reply::Simple(rest.to_string())),
        "-" => Ok(Reply::Error(rest.to_string())),
        ":" => Ok(Reply::Int(num(rest)?)),
        "$" => {
            let n = num(rest)?;
            if n < 0 {
                return Ok(Reply::Bulk(None));
            }
            let mut b = vec![0u8; n as usize + 2];
            io::Read::read_exact(r, &mut b)?;
            if !b.ends_with(b"\r\n") {
                return Err(bad("bulk string without CRLF".into()));
            }
            b.truncate(n as usize);
            Ok(Reply::Bulk(Some(b)))
        }
        "*" => {
            let n = num(rest)?;
            if n < 0 {
                return Ok(Reply::Array(None));
            }
            (0..n)
                .map(|_| parse(r))
                .collect::<io::Result<Vec<_>>>()
                .map(|v| Reply::Array(Some(v)))
        }
        _ => Err(bad(format!("unknown reply type in {l:?}"))),
    }
}

/// One connection to a redis-server's unix socket.
pub struct Conn {
    r: BufReader<UnixStream>,
    w: UnixStream,
    buf: Vec<u8>,
}

impl Conn {
    pub fn connect(socket: &Path, timeout: Duration) -> io::Result<Conn> {
        let s = UnixStream::connect(socket)?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        Ok(Conn {
            w: s.try_clone()?,
            r: BufReader::new(s),
            buf: Vec::with_capacity(4096),
        })
    }

    /// Send one command and read its reply.
    pub fn call(&mut self, args: &[&[u8]]) -> io::Result<Reply> {
        self.buf.clear();
        encode(&mut self.buf, args);
        self.w.write_all(&self.buf)?;
        parse(&mut self.r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_encode_as_arrays_of_bulk_strings() {
        let mut v = Vec::new();
        encode(&mut v, &[b"HSET", b"k", b"f", b""]);
        assert_eq!(v, b"*4\r\n$4\r\nHSET\r\n$1\r\nk\r\n$1\r\nf\r\n$0\r\n\r\n");
    }

    #[test]
    fn every_reply_type_parses() {
        let input = b"+OK\r\n-MISCONF no space\r\n:42\r\n$3\r\nabc\r\n$-1\r\n*2\r\n$1\r\na\r\n:1\r\n*-1\r\n";
        let mut r = &input[..];
        assert_eq!(parse(&mut r).unwrap(), Reply::Simple("OK".into()));
        assert_eq!(
            parse(&mut r).unwrap(),
            Reply::Error("MISCONF no space".into())
        );
        assert_eq!(parse(&mut r).unwrap(), Reply::Int(42));
        assert_eq!(parse(&mut r).unwrap(), Reply::Bulk(Some(b"abc".to_vec())));
        assert_eq!(parse(&mut r).unwrap(), Reply::Bulk(None));
        assert_eq!(
            parse(&mut r).unwrap(),
            Reply::Array(Some(vec![Reply::Bulk(Some(b"a".to_vec())), Reply::Int(1)]))
        );
        assert_eq!(parse(&mut r).unwrap(), Reply::Array(None));
        assert_eq!(
            parse(&mut r).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
    }

    #[test]
    fn malformed_replies_are_errors_not_panics() {
        for bad in [
            &b"?x\r\n"[..],
            b"$5\r\nab\r\n",
            b":x\r\n",
            b"+OK\n",
            b"\r\n",
            b"$3\r\nabcXY",
            "\u{e9}x\r\n".as_bytes(),
        ] {
            let mut r = bad;
            assert!(parse(&mut r).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
