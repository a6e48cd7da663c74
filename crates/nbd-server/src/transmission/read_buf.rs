//! The connection's read buffer and request framing: one `read` for many requests.

use std::io;

use nbd_proto::{decode_request, Request, CMD_WRITE, REQUEST_HEADER_LEN};

use crate::handshake::MAX_PAYLOAD;

pub(super) const RBUF_INITIAL: usize = 256 * 1024;

/// Bytes in `buf[pos..end]` are received, not yet parsed.
pub(super) struct ReadBuf {
    pub(super) buf: Vec<u8>,
    pos: usize,
    pub(super) end: usize,
}

impl ReadBuf {
    pub(super) fn new() -> ReadBuf {
        ReadBuf {
            buf: vec![0u8; RBUF_INITIAL],
            pos: 0,
            end: 0,
        }
    }

    /// Free space to read into (never empty).
    pub(super) fn spare(&mut self) -> &mut [u8] {
        if self.pos == self.end {
            self.pos = 0;
            self.end = 0;
        } else if self.buf.len() - self.end < 64 * 1024 && self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            self.buf.resize(self.buf.len() * 2, 0);
        }
        &mut self.buf[self.end..]
    }

    /// The next complete request and the range of its payload, if a whole frame is
    /// buffered. Errors are protocol violations that end the connection.
    pub(super) fn next_frame(&mut self) -> io::Result<Option<(Request, std::ops::Range<usize>)>> {
        if self.end - self.pos < REQUEST_HEADER_LEN {
            return Ok(None);
        }
        let req = decode_request(&self.buf[self.pos..self.pos + REQUEST_HEADER_LEN])
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
        let mut frame = REQUEST_HEADER_LEN;
        if req.command == CMD_WRITE {
            if req.length > MAX_PAYLOAD {
                // The spec lets a server hang up on payloads this large rather than read
                // them: it is the only answer that bounds memory.
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "WRITE of {} bytes exceeds the maximum payload {MAX_PAYLOAD}",
                        req.length
                    ),
                ));
            }
            frame += req.length as usize;
            if self.end - self.pos < frame {
                if self.buf.len() - self.pos < frame {
                    self.buf.copy_within(self.pos..self.end, 0);
                    self.end -= self.pos;
                    self.pos = 0;
                    if self.buf.len() < frame {
                        self.buf.resize(frame.next_power_of_two(), 0);
                    }
                }
                return Ok(None);
            }
        }
        let payload = self.pos + REQUEST_HEADER_LEN..self.pos + frame;
        self.pos += frame;
        Ok(Some((req, payload)))
    }
}
