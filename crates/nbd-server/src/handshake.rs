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
    let no_zeroes = st.no_zeroes;
    let mut out = Vec::with_capacity(256);
    let mut structured = false;
    // (export name, selected) from SET_META_CONTEXT.
    let mut meta: Option<(String, bool)> = None;
    loop {
        let mut hdr = [0u8; OPTION_HEADER_LEN];
        match stream.read_exact(&mut hdr).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(Negotiated::Left),
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
        out.clear();
        let opt = h.option;
        if st.tls == TlsMode::Require && !st.tls_active {
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
                        &mut out,
                        opt,
                        REP_ERR_TLS_REQD,
                        "this node requires TLS: send NBD_OPT_STARTTLS first (nbds:// URIs)",
                    );
                    stream.write_all(&out).await?;
                    continue;
                }
            }
        }
        match opt {
            OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(&data).into_owned();
                let Some(vol) = exports
                    .volume(&name)
                    .filter(|_| !exports.node.is_shutting_down())
                else {
                    // The spec's only answer here is to close the connection.
                    return Err(refused(format!(
                        "EXPORT_NAME {}: no such volume",
                        quote(&data)
                    )));
                };
                let ctx = selected_context(&meta, &name, structured);
                encode_export_name_reply(
                    &mut out,
                    vol.size(),
                    transmission_flags(&vol, structured),
                    no_zeroes,
                );
                stream.write_all(&out).await?;
                return Ok(Negotiated::Session(Session {
                    volume: vol,
                    structured,
                    meta_context: ctx,
                }));
            }
            OPT_ABORT => {
                encode_option_reply(&mut out, opt, REP_ACK, &[]);
                let _ = stream.write_all(&out).await;
                return Ok(Negotiated::Left);
            }
            OPT_LIST => {
                if !data.is_empty() {
                    encode_option_error(
                        &mut out,
                        opt,
                        REP_ERR_INVALID,
                        "NBD_OPT_LIST takes no payload",
                    );
                } else {
                    for v in exports.list() {
                        encode_list_entry(&mut out, &v.name, &v.description);
                    }
                    encode_option_reply(&mut out, opt, REP_ACK, &[]);
                }
            }
            OPT_STRUCTURED_REPLY => {
                if !data.is_empty() {
                    encode_option_error(
                        &mut out,
                        opt,
                        REP_ERR_INVALID,
                        "NBD_OPT_STRUCTURED_REPLY takes no payload",
                    );
                } else {
                    structured = true;
                    encode_option_reply(&mut out, opt, REP_ACK, &[]);
                }
            }
            OPT_INFO | OPT_GO => match decode_info_request(&data) {
                Err(e) => encode_option_error(&mut out, opt, REP_ERR_INVALID, &e.to_string()),
                Ok(req) => {
                    if exports.node.is_shutting_down() {
                        encode_option_error(
                            &mut out,
                            opt,
                            REP_ERR_SHUTDOWN,
                            "node is shutting down",
                        );
                    } else if let Some(vol) = exports.volume(&req.name) {
                        let flags = transmission_flags(&vol, structured);
                        encode_info_export(&mut out, opt, vol.size(), flags);
                        if req.requests.contains(&INFO_NAME) {
                            encode_info_string(&mut out, opt, INFO_NAME, &vol.name);
                        }
                        if req.requests.contains(&INFO_DESCRIPTION) && !vol.description.is_empty() {
                            encode_info_string(&mut out, opt, INFO_DESCRIPTION, &vol.description);
                        }
                        encode_info_block_size(
                            &mut out,
                            opt,
                            MIN_BLOCK,
                            PREFERRED_BLOCK,
                            MAX_PAYLOAD,
                        );
                        encode_option_reply(&mut out, opt, REP_ACK, &[]);
                        if opt == OPT_GO {
                            stream.write_all(&out).await?;
                            let ctx = selected_context(&meta, &req.name, structured);
                            return Ok(Negotiated::Session(Session {
                                volume: vol,
                                structured,
                                meta_context: ctx,
                            }));
                        }
                    } else {
                        let msg = format!(
                            "no volume named {}; NBD_OPT_LIST shows the exports",
                            quote(req.name.as_bytes())
                        );
                        encode_option_error(&mut out, opt, REP_ERR_UNKNOWN, &msg);
                    }
                }
            },
            OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => {
                let set = opt == OPT_SET_META_CONTEXT;
                match decode_meta_context_request(&data) {
                    Err(e) => encode_option_error(&mut out, opt, REP_ERR_INVALID, &e.to_string()),
                    Ok(_) if set && !structured => encode_option_error(
                        &mut out,
                        opt,
                        REP_ERR_INVALID,
                        "NBD_OPT_SET_META_CONTEXT needs NBD_OPT_STRUCTURED_REPLY first",
                    ),
                    Ok(req) if exports.volume(&req.export).is_none() => {
                        let msg = format!("no volume named {}", quote(req.export.as_bytes()));
                        encode_option_error(&mut out, opt, REP_ERR_UNKNOWN, &msg);
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
                            encode_meta_context(&mut out, opt, BASE_ALLOCATION_ID, BASE_ALLOCATION);
                        }
                        if set {
                            meta = Some((req.export.clone(), wanted));
                        }
                        encode_option_reply(&mut out, opt, REP_ACK, &[]);
                    }
                }
            }
            OPT_STARTTLS => match (st.tls, st.tls_active) {
                (TlsMode::Off, _) => encode_option_error(
                    &mut out,
                    opt,
                    REP_ERR_UNSUP,
                    "TLS is off on this node (qoslab serve --nbd-tls on|require)",
                ),
                (_, true) => encode_option_error(
                    &mut out,
                    opt,
                    REP_ERR_INVALID,
                    "TLS is already running on this connection",
                ),
                _ if !data.is_empty() => encode_option_error(
                    &mut out,
                    opt,
                    REP_ERR_INVALID,
                    "NBD_OPT_STARTTLS takes no payload",
                ),
                _ => {
                    encode_option_reply(&mut out, opt, REP_ACK, &[]);
                    stream.write_all(&out).await?;
                    stream.flush().await?;
                    return Ok(Negotiated::StartTls);
                }
            },
            _ => {
                let msg = format!("option {opt} is not supported");
                encode_option_error(&mut out, opt, REP_ERR_UNSUP, &msg);
            }
        }
        stream.write_all(&out).await?;
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
