//! Fixed newstyle negotiation: from the greeting to the start of transmission.

use std::io;
use std::sync::Arc;

use nbd_proto::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::node::Node;
use crate::volume::Volume;

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
    let mut f =
        FLAG_HAS_FLAGS | FLAG_SEND_FLUSH | FLAG_SEND_FUA | FLAG_CAN_MULTI_CONN | FLAG_SEND_CACHE;
    if vol.read_only {
        f |= FLAG_READ_ONLY;
    } else {
        f |= FLAG_SEND_TRIM | FLAG_SEND_WRITE_ZEROES | FLAG_SEND_FAST_ZERO;
    }
    if structured {
        f |= FLAG_SEND_DF;
    }
    f
}

/// Run negotiation. `Ok(None)` means the client left cleanly (ABORT or EOF).
pub async fn negotiate<S>(stream: &mut S, node: &Node) -> io::Result<Option<Session>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut out = Vec::with_capacity(256);
    encode_greeting(&mut out);
    stream.write_all(&out).await?;
    let client_flags = stream.read_u32().await?;
    if client_flags & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
        return Err(invalid(format!("unknown client flags 0x{client_flags:x}")));
    }
    let no_zeroes = client_flags & FLAG_C_NO_ZEROES != 0;

    let mut structured = false;
    // (export name, selected) from SET_META_CONTEXT.
    let mut meta: Option<(String, bool)> = None;
    loop {
        let mut hdr = [0u8; OPTION_HEADER_LEN];
        match stream.read_exact(&mut hdr).await {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let h = decode_option_header(&hdr).map_err(|e| invalid(e.to_string()))?;
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
        match opt {
            OPT_EXPORT_NAME => {
                let name = String::from_utf8_lossy(&data).into_owned();
                let Some(vol) = node.volume(&name).filter(|_| !node.is_shutting_down()) else {
                    // The spec's only answer here is to close the connection.
                    return Err(invalid(format!("EXPORT_NAME {name:?}: no such volume")));
                };
                let ctx = selected_context(&meta, &name, structured);
                encode_export_name_reply(
                    &mut out,
                    vol.size(),
                    transmission_flags(&vol, structured),
                    no_zeroes,
                );
                stream.write_all(&out).await?;
                return Ok(Some(Session {
                    volume: vol,
                    structured,
                    meta_context: ctx,
                }));
            }
            OPT_ABORT => {
                encode_option_reply(&mut out, opt, REP_ACK, &[]);
                let _ = stream.write_all(&out).await;
                return Ok(None);
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
                    for v in node.volumes() {
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
                    if node.is_shutting_down() {
                        encode_option_error(
                            &mut out,
                            opt,
                            REP_ERR_SHUTDOWN,
                            "node is shutting down",
                        );
                    } else if let Some(vol) = node.volume(&req.name) {
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
                            return Ok(Some(Session {
                                volume: vol,
                                structured,
                                meta_context: ctx,
                            }));
                        }
                    } else {
                        let msg = format!(
                            "no volume named {:?}; NBD_OPT_LIST shows the exports",
                            req.name
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
                    Ok(req) if node.volume(&req.export).is_none() => {
                        let msg = format!("no volume named {:?}", req.export);
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
            OPT_STARTTLS => {
                encode_option_error(
                    &mut out,
                    opt,
                    REP_ERR_UNSUP,
                    "TLS is not supported by this node",
                );
            }
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
