//! Fixed newstyle negotiation: from the greeting to the start of transmission.

use std::io;
use std::sync::Arc;

use nbd_proto::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use storage_node::volume::Volume;

use crate::Exports;

/// Largest option payload we read; longer ones end the session (names are ≤ 4096 bytes).
pub const MAX_OPTION_LEN: u32 = 64 * 1024;
/// Minimum, preferred and maximum block sizes advertised with NBD_INFO_BLOCK_SIZE.
pub const MIN_BLOCK: u32 = 1;
pub const PREFERRED_BLOCK: u32 = 4096;
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// Context id of `base:allocation`.
pub const BASE_ALLOCATION_ID: u32 = 1;

/// What negotiation agreed on.
pub struct Session {
    pub volume: Arc<Volume>,
    pub structured: bool,
    /// Context id for BLOCK_STATUS when `base:allocation` was selected.
    pub meta_context: Option<u32>,
}

/// Transmission flags for a volume.
pub fn transmission_flags(vol: &Volume, structured: bool) -> u16 {
    let be = &vol.backend;
    let mut f = FLAG_HAS_FLAGS | FLAG_CAN_MULTI_CONN;
    if be.can_flush() {
        f |= FLAG_SEND_FLUSH | FLAG_SEND_FUA;
    }
    if be.can_cache() {
        f |= FLAG_SEND_CACHE;
    }
    if vol.read_only || !be.can_write() {
        f |= FLAG_READ_ONLY;
    } else {
        // What the backend declares it can do (nbdkit's can_trim, can_zero, can_fast_zero).
        if be.can_trim() {
            f |= FLAG_SEND_TRIM;
        }
        if be.can_zero() {
            f |= FLAG_SEND_WRITE_ZEROES;
            if be.can_fast_zero() {
                f |= FLAG_SEND_FAST_ZERO;
            }
        }
    }
    if structured {
        f |= FLAG_SEND_DF;
    }
    f
}

/// How a node offers TLS on NBD (nbdkit's `--tls=off|on|require`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TlsMode {
    /// NOTLS: STARTTLS is refused.
    #[default]
    Off,
    /// SELECTIVETLS with no TLS-only export: a client may upgrade, or not.
    On,
    /// FORCEDTLS: every option but STARTTLS and ABORT gets NBD_REP_ERR_TLS_REQD until
    /// the client upgrades; EXPORT_NAME before it closes the connection.
    Require,
}

/// How negotiation ended.
pub enum Negotiated {
    /// Transmission starts.
    Session(Session),
    /// The client left cleanly (ABORT or EOF).
    Left,
    /// STARTTLS was acknowledged: run the TLS handshake, then [`options`] again over it.
    StartTls,
}

/// What the options phase needs to know.
#[derive(Debug, Clone, Copy)]
pub struct OptionState {
    pub no_zeroes: bool,
    pub tls: TlsMode,
    /// TLS is already running on this connection.
    pub tls_active: bool,
}

/// At most this many bytes of client input are ever quoted in a message or log line.
pub const QUOTE_MAX: usize = 32;

/// Client bytes for a log line or error message: at most [`QUOTE_MAX`] of them, escaped
/// (so a client cannot forge log lines or send terminal escapes), with the total length
/// when cut.
pub fn quote(bytes: &[u8]) -> String {
    let shown: String = bytes[..bytes.len().min(QUOTE_MAX)]
        .iter()
        .flat_map(|b| std::ascii::escape_default(*b))
        .map(char::from)
        .collect();
    if bytes.len() > QUOTE_MAX {
        format!("\"{shown}\"... ({} bytes)", bytes.len())
    } else {
        format!("\"{shown}\"")
    }
}

/// Send the greeting and read the client flags; returns NBD_FLAG_C_NO_ZEROES.
pub async fn greet<S>(stream: &mut S) -> io::Result<bool>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut out = Vec::with_capacity(32);
    encode_greeting(&mut out);
    stream.write_all(&out).await?;
    let mut flags = [0u8; 4];
    stream.read_exact(&mut flags).await?;
    let client_flags = u32::from_be_bytes(flags);
    if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(invalid(format!(
            "unknown client flags 0x{client_flags:08x} ({}: not an NBD client?)",
            quote(&flags)
        )));
    }
    Ok(client_flags & FLAG_C_NO_ZEROES != 0)
}

/// Greeting and options without TLS. `Ok(None)` means the client left cleanly.
pub async fn negotiate<S>(stream: &mut S, exports: &Exports) -> io::Result<Option<Session>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let no_zeroes = greet(stream).await?;
    let st = OptionState {
        no_zeroes,
        tls: TlsMode::Off,
        tls_active: false,
    };
    Ok(match options(stream, exports, st).await? {
        Negotiated::Session(s) => Some(s),
        Negotiated::Left | Negotiated::StartTls => None,
    })
}

/// The options phase: haggle until the client enters transmission, leaves, or upgrades
/// to TLS.
pub async fn options<S>(
    stream: &mut S,
    exports: &Exports,
    st: OptionState,
) -> io::Result<Negotiated>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut h = Haggle {
        exports,
        st,
        structured: false,
        meta: None,
        out: Vec::with_capacity(256),
    };
    loop {
        let Some((opt, data)) = read_option(stream).await? else {
            return Ok(Negotiated::Left);
        };
        h.out.clear();
        match h.answer(opt, &data)? {
            None => stream.write_all(&h.out).await?,
            Some(Negotiated::Left) => {
                // ABORT: acknowledged if the client still listens.
                let _ = stream.write_all(&h.out).await;
                return Ok(Negotiated::Left);
            }
            Some(Negotiated::StartTls) => {
                stream.write_all(&h.out).await?;
                stream.flush().await?;
                return Ok(Negotiated::StartTls);
            }
            Some(session) => {
                stream.write_all(&h.out).await?;
                return Ok(session);
            }
        }
    }
}

/// The next option's code and payload; `None`: the client left (EOF).
async fn read_option<S>(stream: &mut S) -> io::Result<Option<(u32, Vec<u8>)>>
where
    S: AsyncRead + Unpin,
{
    let mut hdr = [0u8; OPTION_HEADER_LEN];
    match stream.read_exact(&mut hdr).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let h = decode_option_header(&hdr)
        .map_err(|e| invalid(format!("{e}: client sent {}", quote(&hdr))))?;
    if h.length > MAX_OPTION_LEN {
        return Err(invalid(format!(
            "option {} payload of {} bytes exceeds {MAX_OPTION_LEN}",
            h.option, h.length
        )));
    }
    let mut data = vec![0u8; h.length as usize];
    stream.read_exact(&mut data).await?;
    Ok(Some((h.option, data)))
}

/// The options phase's state: what the client negotiated so far, and the reply being
/// built (sans-IO: [`options`] sends it).
struct Haggle<'a> {
    exports: &'a Exports,
    st: OptionState,
    structured: bool,
    /// (export name, selected) from SET_META_CONTEXT.
    meta: Option<(String, bool)>,
    out: Vec<u8>,
}

impl Haggle<'_> {
    /// Answer one option into `out`: `None`, send it and go on; `Some`, send it and the
    /// options phase ends so. An error closes the connection.
    fn answer(&mut self, opt: u32, data: &[u8]) -> io::Result<Option<Negotiated>> {
        if self.st.tls == TlsMode::Require && !self.st.tls_active {
            match opt {
                OPT_STARTTLS | OPT_ABORT => {}
                OPT_EXPORT_NAME => {
                    // It cannot be answered with an error: the spec's answer is to hang up.
                    return Err(refused(
                        "EXPORT_NAME before STARTTLS on a TLS-only node".into(),
                    ));
                }
                _ => {
                    encode_option_error(
                        &mut self.out,
                        opt,
                        REP_ERR_TLS_REQD,
                        "this node requires TLS: send NBD_OPT_STARTTLS first (nbds:// URIs)",
                    );
                    return Ok(None);
                }
            }
        }
        let out = &mut self.out;
        match opt {
            OPT_EXPORT_NAME => return self.export_name(data).map(Some),
            OPT_ABORT => {
                encode_option_reply(out, opt, REP_ACK, &[]);
                return Ok(Some(Negotiated::Left));
            }
            OPT_LIST if !data.is_empty() => {
                encode_option_error(out, opt, REP_ERR_INVALID, "NBD_OPT_LIST takes no payload")
            }
            OPT_LIST => {
                for v in self.exports.list() {
                    encode_list_entry(out, &v.name, &v.description);
                }
                encode_option_reply(out, opt, REP_ACK, &[]);
            }
            OPT_STRUCTURED_REPLY if !data.is_empty() => encode_option_error(
                out,
                opt,
                REP_ERR_INVALID,
                "NBD_OPT_STRUCTURED_REPLY takes no payload",
            ),
            OPT_STRUCTURED_REPLY => {
                self.structured = true;
                encode_option_reply(out, opt, REP_ACK, &[]);
            }
            OPT_INFO | OPT_GO => return Ok(self.info(opt, data)),
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => self.meta_context(opt, data),
            OPT_STARTTLS => return Ok(self.starttls(data)),
            _ => {
                let msg = format!("option {opt} is not supported");
                encode_option_error(out, opt, REP_ERR_UNSUP, &msg);
            }
        }
        Ok(None)
    }

    /// EXPORT_NAME: the volume, or the connection closes (the spec's only answer).
    fn export_name(&mut self, data: &[u8]) -> io::Result<Negotiated> {
        let exports = self.exports;
        let name = String::from_utf8_lossy(data).into_owned();
        let Some(vol) = exports
            .volume(&name)
            .filter(|_| !exports.node.is_shutting_down())
        else {
            return Err(refused(format!(
                "EXPORT_NAME {}: no such volume",
                quote(data)
            )));
        };
        let ctx = selected_context(&self.meta, &name, self.structured);
        encode_export_name_reply(
            &mut self.out,
            vol.size(),
            transmission_flags(&vol, self.structured),
            self.st.no_zeroes,
        );
        Ok(Negotiated::Session(Session {
            volume: vol,
            structured: self.structured,
            meta_context: ctx,
        }))
    }

    /// INFO and GO: the export's details; GO also enters transmission.
    fn info(&mut self, opt: u32, data: &[u8]) -> Option<Negotiated> {
        let out = &mut self.out;
        let req = match decode_info_request(data) {
            Err(e) => {
                encode_option_error(out, opt, REP_ERR_INVALID, &e.to_string());
                return None;
            }
            Ok(req) => req,
        };
        if self.exports.node.is_shutting_down() {
            encode_option_error(out, opt, REP_ERR_SHUTDOWN, "node is shutting down");
            return None;
        }
        let Some(vol) = self.exports.volume(&req.name) else {
            let msg = format!(
                "no volume named {}; NBD_OPT_LIST shows the exports",
                quote(req.name.as_bytes())
            );
            encode_option_error(out, opt, REP_ERR_UNKNOWN, &msg);
            return None;
        };
        let flags = transmission_flags(&vol, self.structured);
        encode_info_export(out, opt, vol.size(), flags);
        if req.requests.contains(&INFO_NAME) {
            encode_info_string(out, opt, INFO_NAME, &vol.name);
        }
        if req.requests.contains(&INFO_DESCRIPTION) && !vol.description.is_empty() {
            encode_info_string(out, opt, INFO_DESCRIPTION, &vol.description);
        }
        encode_info_block_size(out, opt, MIN_BLOCK, PREFERRED_BLOCK, MAX_PAYLOAD);
        encode_option_reply(out, opt, REP_ACK, &[]);
        (opt == OPT_GO).then(|| {
            let ctx = selected_context(&self.meta, &req.name, self.structured);
            Negotiated::Session(Session {
                volume: vol,
                structured: self.structured,
                meta_context: ctx,
            })
        })
    }

    /// LIST_META_CONTEXT and SET_META_CONTEXT: `base:allocation` only.
    fn meta_context(&mut self, opt: u32, data: &[u8]) {
        let set = opt == OPT_SET_META_CONTEXT;
        let out = &mut self.out;
        match decode_meta_context_request(data) {
            Err(e) => encode_option_error(out, opt, REP_ERR_INVALID, &e.to_string()),
            Ok(_) if set && !self.structured => encode_option_error(
                out,
                opt,
                REP_ERR_INVALID,
                "NBD_OPT_SET_META_CONTEXT needs NBD_OPT_STRUCTURED_REPLY first",
            ),
            Ok(req) if self.exports.volume(&req.export).is_none() => {
                let msg = format!("no volume named {}", quote(req.export.as_bytes()));
                encode_option_error(out, opt, REP_ERR_UNKNOWN, &msg);
            }
            Ok(req) => {
                let wanted = if req.queries.is_empty() {
                    !set
                } else {
                    req.queries
                        .iter()
                        .any(|q| q == BASE_ALLOCATION || (!set && q == "base:"))
                };
                if wanted {
                    encode_meta_context(out, opt, BASE_ALLOCATION_ID, BASE_ALLOCATION);
                }
                if set {
                    self.meta = Some((req.export.clone(), wanted));
                }
                encode_option_reply(out, opt, REP_ACK, &[]);
            }
        }
    }

    /// STARTTLS: acknowledged when TLS is offered and not yet running.
    fn starttls(&mut self, data: &[u8]) -> Option<Negotiated> {
        let (out, opt) = (&mut self.out, OPT_STARTTLS);
        match (self.st.tls, self.st.tls_active) {
            (TlsMode::Off, _) => encode_option_error(
                out,
                opt,
                REP_ERR_UNSUP,
                "TLS is off on this node (qoslab serve --nbd-tls on|require)",
            ),
            (_, true) => encode_option_error(
                out,
                opt,
                REP_ERR_INVALID,
                "TLS is already running on this connection",
            ),
            _ if !data.is_empty() => encode_option_error(
                out,
                opt,
                REP_ERR_INVALID,
                "NBD_OPT_STARTTLS takes no payload",
            ),
            _ => {
                encode_option_reply(out, opt, REP_ACK, &[]);
                return Some(Negotiated::StartTls);
            }
        }
        None
    }
}

fn selected_context(meta: &Option<(String, bool)>, export: &str, structured: bool) -> Option<u32> {
    match meta {
        Some((name, true)) if structured && name == export => Some(BASE_ALLOCATION_ID),
        _ => None,
    }
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

/// A connection the protocol says to close (not a malformed one).
fn refused(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::PermissionDenied, msg)
}

#[cfg(test)]
mod tests {
    use std::io;
    use std::sync::Arc;

    use nbd_proto::*;
    use storage_node::backend::{Backend, Extent, FileBackend};
    use storage_node::volume::Volume;

    /// A file that declares it cannot trim or zero fast (as an nbdkit plugin may).
    struct NoTrim(FileBackend);

    impl Backend for NoTrim {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
            self.0.read_at(buf, offset)
        }
        fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
            self.0.write_at(buf, offset)
        }
        fn trim(&self, offset: u64, len: u64) -> io::Result<()> {
            self.0.trim(offset, len)
        }
        fn zero(&self, offset: u64, len: u64, may_trim: bool, fast: bool) -> io::Result<()> {
            self.0.zero(offset, len, may_trim, fast)
        }
        fn flush(&self) -> io::Result<()> {
            self.0.flush()
        }
        fn cache(&self, offset: u64, len: u64) -> io::Result<()> {
            self.0.cache(offset, len)
        }
        fn extents(&self, offset: u64, len: u64, max: usize) -> io::Result<Vec<Extent>> {
            self.0.extents(offset, len, max)
        }
        fn allocated_bytes(&self) -> io::Result<u64> {
            self.0.allocated_bytes()
        }
        fn byte_len(&self) -> io::Result<u64> {
            self.0.byte_len()
        }
        fn grow(&self, size: u64) -> io::Result<()> {
            self.0.grow(size)
        }
        fn can_trim(&self) -> bool {
            false
        }
        fn can_fast_zero(&self) -> bool {
            false
        }
    }

    /// The transmission flags are what the volume's backend declares.
    #[test]
    fn flags_follow_the_backends_declarations() {
        let d = test_support::TestDir::new("nbd-flags");
        let file = |n: &str| FileBackend::open(&d.join(n), 1 << 20, false, false).unwrap();
        let vol = |b: Arc<dyn Backend>, ro: bool| {
            Volume::new("v".into(), String::new(), ro, 1 << 20, 0, b)
        };
        let all = FLAG_HAS_FLAGS
            | FLAG_CAN_MULTI_CONN
            | FLAG_SEND_FLUSH
            | FLAG_SEND_FUA
            | FLAG_SEND_CACHE
            | FLAG_SEND_TRIM
            | FLAG_SEND_WRITE_ZEROES
            | FLAG_SEND_FAST_ZERO;
        let f = super::transmission_flags(&vol(Arc::new(file("a")), false), false);
        assert_eq!(f, all, "a file can do everything");
        let f = super::transmission_flags(&vol(Arc::new(NoTrim(file("b"))), false), true);
        assert_eq!(
            f,
            (all & !(FLAG_SEND_TRIM | FLAG_SEND_FAST_ZERO)) | FLAG_SEND_DF,
            "no TRIM, no fast zero"
        );
        let f = super::transmission_flags(&vol(Arc::new(file("c")), true), false);
        assert_eq!(
            f & (FLAG_READ_ONLY | FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES),
            FLAG_READ_ONLY
        );
    }

    /// Run the options phase over `input` (pipelined options) against a node of `toml`:
    /// how it ended, and every byte it answered.
    async fn run_options(
        toml: &str,
        input: &[u8],
        tls: super::TlsMode,
    ) -> (super::Negotiated, Vec<u8>) {
        use storage_node::{Node, NodeConfig};
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let d = test_support::TestDir::new("nbd-options");
        let cfg = NodeConfig::parse(toml, "t.toml").unwrap();
        let exports = crate::Exports::new(Node::open(&cfg, &d).unwrap(), None);
        let (mut client, mut server) = tokio::io::duplex(1 << 16);
        client.write_all(input).await.unwrap();
        let st = super::OptionState {
            no_zeroes: true,
            tls,
            tls_active: false,
        };
        let end = super::options(&mut server, &exports, st).await.unwrap();
        drop(server);
        let mut replies = Vec::new();
        client.read_to_end(&mut replies).await.unwrap();
        (end, replies)
    }

    /// Every option of the options phase, bad and good, in one pipelined batch: each gets
    /// the spec's reply type, in order, and ABORT ends the phase (the answers clients such
    /// as nbdinfo and qemu rely on; end to end in the e2e tier's protocol tests).
    #[tokio::test]
    async fn each_option_gets_its_reply() {
        let opt = |out: &mut Vec<u8>, o: u32, data: &[u8]| {
            out.extend_from_slice(&IHAVEOPT.to_be_bytes());
            out.extend_from_slice(&o.to_be_bytes());
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            out.extend_from_slice(data);
        };
        // name length, name, then requests (count, INFO_NAME, INFO_DESCRIPTION).
        let info = |name: &str| {
            let mut v = (name.len() as u32).to_be_bytes().to_vec();
            v.extend_from_slice(name.as_bytes());
            v.extend_from_slice(&2u16.to_be_bytes());
            v.extend_from_slice(&INFO_NAME.to_be_bytes());
            v.extend_from_slice(&INFO_DESCRIPTION.to_be_bytes());
            v
        };
        // export name, then no queries.
        let meta = |name: &str| {
            let mut v = (name.len() as u32).to_be_bytes().to_vec();
            v.extend_from_slice(name.as_bytes());
            v.extend_from_slice(&0u32.to_be_bytes());
            v
        };
        let mut out = Vec::new();
        opt(&mut out, OPT_LIST, b"x");
        opt(&mut out, OPT_LIST, b"");
        opt(&mut out, OPT_STRUCTURED_REPLY, b"x");
        opt(&mut out, OPT_SET_META_CONTEXT, &meta("a"));
        opt(&mut out, OPT_STRUCTURED_REPLY, b"");
        opt(&mut out, OPT_STARTTLS, b"");
        opt(&mut out, 99, b"");
        opt(&mut out, OPT_INFO, &info("nope"));
        opt(&mut out, OPT_INFO, &info("a"));
        opt(&mut out, OPT_LIST_META_CONTEXT, &meta("a"));
        opt(&mut out, OPT_ABORT, b"");
        let toml = "[[volume]]\nname = \"a\"\nsize = \"1MiB\"\ndescription = \"first\"\n\
                    [[volume]]\nname = \"b\"\nsize = \"2MiB\"\n";
        let (end, replies) = run_options(toml, &out, super::TlsMode::Off).await;
        assert!(matches!(end, super::Negotiated::Left), "ABORT ends it");
        let mut got = Vec::new();
        let mut r = &replies[..];
        while !r.is_empty() {
            let o = u32::from_be_bytes(r[8..12].try_into().unwrap());
            let ty = u32::from_be_bytes(r[12..16].try_into().unwrap());
            let len = u32::from_be_bytes(r[16..20].try_into().unwrap()) as usize;
            let data = &r[20..20 + len];
            if ty == REP_INFO && data[..2] == INFO_EXPORT.to_be_bytes() {
                assert_eq!(u64::from_be_bytes(data[2..10].try_into().unwrap()), 1 << 20);
            }
            got.push((o, ty));
            r = &r[20 + len..];
        }
        assert_eq!(
            got,
            vec![
                (OPT_LIST, REP_ERR_INVALID),
                (OPT_LIST, REP_SERVER),
                (OPT_LIST, REP_SERVER),
                (OPT_LIST, REP_ACK),
                (OPT_STRUCTURED_REPLY, REP_ERR_INVALID),
                (OPT_SET_META_CONTEXT, REP_ERR_INVALID),
                (OPT_STRUCTURED_REPLY, REP_ACK),
                (OPT_STARTTLS, REP_ERR_UNSUP),
                (99, REP_ERR_UNSUP),
                (OPT_INFO, REP_ERR_UNKNOWN),
                (OPT_INFO, REP_INFO),
                (OPT_INFO, REP_INFO),
                (OPT_INFO, REP_INFO),
                (OPT_INFO, REP_INFO),
                (OPT_INFO, REP_ACK),
                (OPT_LIST_META_CONTEXT, REP_META_CONTEXT),
                (OPT_LIST_META_CONTEXT, REP_ACK),
                (OPT_ABORT, REP_ACK),
            ]
        );
    }

    /// A TLS-only node answers everything but STARTTLS and ABORT with TLS_REQD, then
    /// acknowledges STARTTLS and hands the connection to the TLS handshake.
    #[tokio::test]
    async fn a_tls_only_node_wants_starttls_first() {
        let mut out = Vec::new();
        for o in [OPT_LIST, OPT_STARTTLS] {
            out.extend_from_slice(&IHAVEOPT.to_be_bytes());
            out.extend_from_slice(&o.to_be_bytes());
            out.extend_from_slice(&0u32.to_be_bytes());
        }
        let toml = "[[volume]]\nname = \"a\"\nsize = \"1MiB\"\n";
        let (end, r) = run_options(toml, &out, super::TlsMode::Require).await;
        assert!(matches!(end, super::Negotiated::StartTls));
        let ty = |at: usize| u32::from_be_bytes(r[at + 12..at + 16].try_into().unwrap());
        let len = u32::from_be_bytes(r[16..20].try_into().unwrap()) as usize;
        assert_eq!((ty(0), ty(20 + len)), (REP_ERR_TLS_REQD, REP_ACK));
        assert_eq!(r.len(), 20 + len + 20, "nothing more");
    }

    #[test]
    fn client_input_is_quoted_short_and_escaped() {
        assert_eq!(super::quote(b"GET "), "\"GET \"");
        assert_eq!(super::quote(b"a\nb\x1b[2J"), "\"a\\nb\\x1b[2J\"");
        let long = vec![b'x'; 5000];
        let q = super::quote(&long);
        assert!(q.ends_with("... (5000 bytes)"), "{q}");
        assert!(q.len() < 60, "{q}");
    }
}
