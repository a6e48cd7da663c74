//! Raw NBD bytes against the real server: negotiation, malformed traffic, error codes,
//! structured replies, pipelining, and resilience to garbage.

use std::io::Write;
use std::time::Duration;

use crate::client::*;
use crate::util::{assert_same_bytes, pattern, Node};

const VOL_SIZE: u64 = 64 << 20;
const RO_SIZE: u64 = 1 << 20;

const CONFIG: &str = r#"
[[volume]]
name = "vol"
size = "64MiB"
description = "protocol test volume"

[[volume]]
name = "ro"
size = "1MiB"
read_only = true
description = "read-only volume"
"#;

/// A WRITE payload that is itself a run of well-formed READ headers with a cookie the
/// client never used: if the server failed to drain a rejected payload it would answer
/// them, and `Client::recv` fails on replies for unknown cookies.
fn poisoned_payload(len: usize) -> Vec<u8> {
    let hdr = Client::header(0, CMD_READ, 0xbad_c0de, 0, 512);
    let mut p: Vec<u8> = hdr.iter().copied().cycle().take(len).collect();
    p.truncate(len);
    p
}

#[test]
fn info_list_and_go_describe_the_exports() {
    let node = Node::start(CONFIG);
    let mut h = Handshake::start(node.socket());

    // LIST: one REP_SERVER per volume (name + description), then ACK.
    let replies = h.option(OPT_LIST, &[]);
    assert_eq!(replies.last().unwrap().ty, REP_ACK);
    let mut listed: Vec<(String, String)> = replies[..replies.len() - 1]
        .iter()
        .map(|r| {
            assert_eq!(r.ty, REP_SERVER);
            let n = u32::from_be_bytes(r.data[0..4].try_into().unwrap()) as usize;
            (
                String::from_utf8_lossy(&r.data[4..4 + n]).into_owned(),
                String::from_utf8_lossy(&r.data[4 + n..]).into_owned(),
            )
        })
        .collect();
    listed.sort();
    assert_eq!(
        listed,
        vec![
            ("ro".to_string(), "read-only volume".to_string()),
            ("vol".to_string(), "protocol test volume".to_string())
        ]
    );

    // INFO with NAME and DESCRIPTION requested.
    let info = h
        .info_or_go(OPT_INFO, "vol", &[INFO_NAME, INFO_DESCRIPTION])
        .expect("INFO vol");
    assert_eq!(info.size, VOL_SIZE);
    assert_eq!(info.name.as_deref(), Some("vol"));
    assert_eq!(info.description.as_deref(), Some("protocol test volume"));
    assert_eq!(info.block_size, Some((1, 4096, 32 << 20)));
    let want = FLAG_HAS_FLAGS
        | FLAG_SEND_FLUSH
        | FLAG_SEND_FUA
        | FLAG_CAN_MULTI_CONN
        | FLAG_SEND_CACHE
        | FLAG_SEND_TRIM
        | FLAG_SEND_WRITE_ZEROES
        | FLAG_SEND_FAST_ZERO;
    assert_eq!(info.flags, want, "writable volume flags {:#x}", info.flags);

    let ro = h.info_or_go(OPT_INFO, "ro", &[]).expect("INFO ro");
    assert_eq!(ro.size, RO_SIZE);
    assert_eq!(
        ro.flags,
        FLAG_HAS_FLAGS
            | FLAG_READ_ONLY
            | FLAG_SEND_FLUSH
            | FLAG_SEND_FUA
            | FLAG_CAN_MULTI_CONN
            | FLAG_SEND_CACHE,
        "read-only volume flags {:#x}",
        ro.flags
    );
    assert_eq!(
        ro.block_size,
        Some((1, 4096, 32 << 20)),
        "BLOCK_SIZE is sent even when not requested"
    );

    // Unknown export: ERR_UNKNOWN and the session goes on.
    let e = h
        .info_or_go(OPT_GO, "no-such-volume", &[])
        .expect_err("GO of an unknown export");
    assert_eq!(e.ty, REP_ERR_UNKNOWN);

    // Structured replies after all: DF is then advertised.
    h.structured_replies();
    let mut c = h.go("vol");
    assert_eq!(
        c.info.flags & FLAG_SEND_DF,
        FLAG_SEND_DF,
        "DF with structured replies"
    );
    assert_eq!(c.read(0, 4096), vec![0u8; 4096]);
    c.disconnect();
}

#[test]
fn abort_is_acknowledged_then_closed() {
    let node = Node::start(CONFIG);
    let mut h = Handshake::start(node.socket());
    let r = h.option(OPT_ABORT, &[]);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].ty, REP_ACK);
    expect_closed(&mut h.s, Duration::from_secs(10), "after NBD_OPT_ABORT");
}

#[test]
fn bad_option_magic_closes_only_that_connection() {
    let node = Node::start(CONFIG);
    // A well-behaved client, already transmitting.
    let mut good = Client::open(node.socket(), "vol");
    let data = pattern(1, 8192);
    good.write(4096, &data);

    let mut bad = Handshake::start(node.socket());
    let mut opt = Vec::new();
    opt.extend_from_slice(b"IHAVEOPX"); // wrong magic
    opt.extend_from_slice(&OPT_GO.to_be_bytes());
    opt.extend_from_slice(&0u32.to_be_bytes());
    bad.s.write_all(&opt).unwrap();
    expect_closed(
        &mut bad.s,
        Duration::from_secs(10),
        "option with a bad magic",
    );

    // The concurrent client is unaffected, and new clients are served.
    assert_same_bytes(
        "read after another client's bad magic",
        &good.read(4096, 8192),
        &data,
    );
    let mut again = Client::open(node.socket(), "vol");
    assert_same_bytes("read on a new connection", &again.read(4096, 8192), &data);
    good.disconnect();
    again.disconnect();
}

#[test]
fn unknown_options_are_unsupported_and_the_session_continues() {
    let node = Node::start(CONFIG);
    let mut h = Handshake::start(node.socket());
    let r = h.option(42, b"some payload the server must skip");
    assert_eq!(r.len(), 1, "one reply to an unknown option: {r:?}");
    assert_eq!(r[0].ty, REP_ERR_UNSUP, "unknown option 42");
    assert_eq!(r[0].option, 42);

    let r = h.option(OPT_STARTTLS, &[]);
    assert_eq!(r[0].ty, REP_ERR_UNSUP, "STARTTLS");

    // Malformed GO payload (name length beyond the payload): an error, not a hang-up.
    let r = h.option(OPT_GO, &[0, 0, 0, 200, b'v']);
    assert!(r[0].is_err(), "malformed GO: {r:?}");

    let mut c = h.go("vol");
    assert_eq!(c.size(), VOL_SIZE);
    c.write(0, b"still here");
    assert_eq!(c.read(0, 10), b"still here");
    c.disconnect();
}

#[test]
fn oversized_option_payload_closes_the_connection() {
    let node = Node::start(CONFIG);
    let mut h = Handshake::start(node.socket());
    let mut opt = Vec::new();
    opt.extend_from_slice(&IHAVEOPT.to_be_bytes());
    opt.extend_from_slice(&OPT_GO.to_be_bytes());
    opt.extend_from_slice(&(1u32 << 20).to_be_bytes());
    h.s.write_all(&opt).unwrap();
    expect_closed(&mut h.s, Duration::from_secs(10), "1 MiB option payload");
    let mut c = Client::open(node.socket(), "vol");
    c.read(0, 512);
}

#[test]
fn unknown_commands_and_flags_get_einval() {
    let node = Node::start(CONFIG);
    let mut c = Client::open(node.socket(), "vol");
    let data = pattern(2, 4096);
    c.write(0, &data);

    let r = c.request(0, 99, 0, 4096, &[]);
    assert_eq!(r.error, EINVAL, "unknown command 99");
    assert_same_bytes("read after unknown command", &c.read(0, 4096), &data);

    let r = c.request(0x8000, CMD_READ, 0, 4096, &[]);
    assert_eq!(r.error, EINVAL, "READ with unknown flag 0x8000");
    let r = c.request(CMD_FLAG_REQ_ONE, CMD_READ, 0, 4096, &[]);
    assert_eq!(r.error, EINVAL, "READ with REQ_ONE (a BLOCK_STATUS flag)");
    // A WRITE with a bad flag is rejected and its payload drained.
    let r = c.request(0x4000, CMD_WRITE, 0, 4096, &poisoned_payload(4096));
    assert_eq!(r.error, EINVAL, "WRITE with unknown flag 0x4000");
    assert_same_bytes(
        "rejected WRITE must not have written",
        &c.read(0, 4096),
        &data,
    );

    // FUA is accepted on every command.
    let r = c.request(CMD_FLAG_FUA, CMD_WRITE, 8192, 4, b"fua!");
    assert_eq!(r.error, 0, "WRITE with FUA");
    assert_eq!(c.read(8192, 4), b"fua!");
    c.disconnect();
}

#[test]
fn out_of_range_requests_get_the_right_errno() {
    let node = Node::start(CONFIG);
    let mut c = Client::open(node.socket(), "vol");
    let size = c.size();
    let data = pattern(3, 4096);
    c.write(0, &data);

    // Beyond the end.
    assert_eq!(
        c.request(0, CMD_READ, size - 512, 1024, &[]).error,
        EINVAL,
        "READ past end"
    );
    assert_eq!(
        c.request(0, CMD_READ, size, 1, &[]).error,
        EINVAL,
        "READ at end"
    );
    assert_eq!(
        c.request(0, CMD_TRIM, size - 512, 1024, &[]).error,
        EINVAL,
        "TRIM past end"
    );
    assert_eq!(
        c.request(0, CMD_CACHE, size - 512, 1024, &[]).error,
        EINVAL,
        "CACHE past end"
    );
    assert_eq!(
        c.request(0, CMD_WRITE_ZEROES, size - 512, 1024, &[]).error,
        ENOSPC,
        "WRITE_ZEROES past end"
    );
    let r = c.request(0, CMD_WRITE, size - 1024, 4096, &poisoned_payload(4096));
    assert_eq!(r.error, ENOSPC, "WRITE past end");
    // The rejected payload was drained: the next request is parsed correctly.
    assert_same_bytes("read after rejected WRITE", &c.read(0, 4096), &data);
    // The last byte is readable and writable.
    c.write(size - 1, b"z");
    assert_eq!(c.read(size - 1, 1), b"z");
    assert_eq!(
        std::fs::metadata(node.volume_file("vol")).unwrap().len(),
        size,
        "a rejected WRITE must not grow the backing file"
    );

    // offset + length overflows u64.
    let off = u64::MAX - 511;
    let r = c.request(0, CMD_WRITE, off, 4096, &poisoned_payload(4096));
    assert_eq!(r.error, ENOSPC, "WRITE with offset+length overflowing");
    assert_eq!(
        c.request(0, CMD_WRITE_ZEROES, off, 4096, &[]).error,
        ENOSPC,
        "WRITE_ZEROES overflow"
    );
    assert_eq!(
        c.request(0, CMD_READ, off, 4096, &[]).error,
        EINVAL,
        "READ overflow"
    );
    assert_eq!(
        c.request(0, CMD_TRIM, off, 4096, &[]).error,
        EINVAL,
        "TRIM overflow"
    );
    assert_eq!(
        c.request(0, CMD_CACHE, off, 4096, &[]).error,
        EINVAL,
        "CACHE overflow"
    );
    assert_eq!(
        c.request(0, CMD_READ, u64::MAX, 1, &[]).error,
        EINVAL,
        "READ at u64::MAX"
    );

    // READ larger than the 32 MiB maximum payload (inside the 64 MiB volume): EINVAL.
    assert_eq!(
        c.request(0, CMD_READ, 0, (32 << 20) + 1, &[]).error,
        EINVAL,
        "33 MiB READ (simple)"
    );
    // BLOCK_STATUS without base:allocation negotiated.
    assert_eq!(
        c.request(0, CMD_BLOCK_STATUS, 0, 4096, &[]).error,
        EINVAL,
        "BLOCK_STATUS without context"
    );

    assert_same_bytes("connection still in sync", &c.read(0, 4096), &data);
    c.disconnect();

    // Structured: the same errors come as ERROR chunks; READ > 32 MiB is EOVERFLOW.
    let mut s = Client::open_structured(node.socket(), "vol");
    let r = s.request(0, CMD_READ, (32 << 20) - 4096, (32 << 20) + 1, &[]);
    assert_eq!(r.error, EOVERFLOW, "33 MiB READ (structured)");
    assert_eq!(r.chunks.len(), 1);
    assert_eq!(r.chunks[0].ty, REPLY_TYPE_ERROR);
    assert_eq!(r.chunks[0].flags, REPLY_FLAG_DONE);
    assert_eq!(
        s.request(0, CMD_READ, off, 4096, &[]).error,
        EINVAL,
        "structured READ overflow"
    );
    assert_eq!(
        s.request(0, CMD_BLOCK_STATUS, off, 4096, &[]).error,
        EINVAL,
        "BLOCK_STATUS overflow"
    );
    assert_eq!(
        s.request(0, CMD_BLOCK_STATUS, size - 512, 1024, &[]).error,
        EINVAL,
        "BLOCK_STATUS past end"
    );
    let r = s.request(0, CMD_WRITE, off, 4096, &poisoned_payload(4096));
    assert_eq!(r.error, ENOSPC, "structured WRITE overflow");
    assert_same_bytes("structured read after errors", &s.read(0, 4096), &data);
    s.disconnect();
}

#[test]
fn read_only_volume_rejects_writes_with_eperm() {
    let node = Node::start(CONFIG);
    let mut c = Client::open(node.socket(), "ro");
    assert_eq!(c.info.flags & FLAG_READ_ONLY, FLAG_READ_ONLY);
    let r = c.request(0, CMD_WRITE, 0, 4096, &poisoned_payload(4096));
    assert_eq!(r.error, EPERM, "WRITE to a read-only volume");
    assert_eq!(
        c.request(0, CMD_TRIM, 0, 4096, &[]).error,
        EPERM,
        "TRIM on a read-only volume"
    );
    assert_eq!(
        c.request(0, CMD_WRITE_ZEROES, 0, 4096, &[]).error,
        EPERM,
        "WRITE_ZEROES on a read-only volume"
    );
    // Payload drained; reads and flushes still work.
    assert_eq!(c.read(0, 4096), vec![0u8; 4096]);
    c.flush();
    let r = c.request(0, CMD_WRITE, 8192, 100_000, &poisoned_payload(100_000));
    assert_eq!(r.error, EPERM, "large WRITE to a read-only volume");
    assert_eq!(c.read(8192, 65536), vec![0u8; 65536]);
    c.disconnect();
}

#[test]
fn oversized_write_header_hangs_up_only_that_connection() {
    let node = Node::start(CONFIG);
    let mut other = Client::open(node.socket(), "vol");
    let data = pattern(4, 65536);
    other.write(1 << 20, &data);

    let mut bad = Client::open(node.socket(), "vol");
    bad.send_raw(&Client::header(0, CMD_WRITE, 7, 0, 1 << 30));
    let got = expect_closed(&mut bad.s, Duration::from_secs(10), "1 GiB WRITE header");
    assert!(
        got.is_empty(),
        "server sent {} bytes before hanging up",
        got.len()
    );

    assert_same_bytes(
        "other client after the hang-up",
        &other.read(1 << 20, 65536),
        &data,
    );
    let mut fresh = Client::open(node.socket(), "vol");
    assert_same_bytes(
        "new client after the hang-up",
        &fresh.read(1 << 20, 65536),
        &data,
    );
    other.disconnect();
    fresh.disconnect();
}

#[test]
fn bad_request_magic_hangs_up() {
    let node = Node::start(CONFIG);
    let mut c = Client::open(node.socket(), "vol");
    let mut h = Client::header(0, CMD_READ, 1, 0, 512);
    h[0] ^= 0xff;
    c.send_raw(&h);
    expect_closed(
        &mut c.s,
        Duration::from_secs(10),
        "request with a bad magic",
    );
    Client::open(node.socket(), "vol").read(0, 512);
}

#[test]
fn disc_finishes_in_flight_requests_then_closes() {
    let node = Node::start(CONFIG);
    let mut c = Client::open(node.socket(), "vol");
    let data = pattern(5, 1 << 20);
    let mut b = Vec::new();
    let cookie = c.encode(&mut b, 0, CMD_WRITE, 0, data.len() as u32, &data);
    b.extend_from_slice(&Client::header(0, CMD_DISC, 0, 0, 0));
    c.send_raw(&b);
    let r = c.recv();
    assert_eq!(
        (r.cookie, r.error),
        (cookie, 0),
        "WRITE sent before DISC is answered"
    );
    let rest = expect_closed(&mut c.s, Duration::from_secs(10), "after DISC");
    assert!(rest.is_empty(), "no reply to DISC");
    let mut d = Client::open(node.socket(), "vol");
    assert_same_bytes("data written before DISC", &d.read(0, 1 << 20), &data);
}

#[test]
fn structured_replies_for_read_and_block_status() {
    let node = Node::start(CONFIG);
    let mut c = Client::open_structured(node.socket(), "vol");
    assert!(c.structured && c.meta);

    // Fresh volume: one hole covering the range.
    let r = c.request(0, CMD_BLOCK_STATUS, 0, 1 << 20, &[]);
    assert_eq!(r.error, 0);
    assert_eq!(r.chunks.len(), 1, "one BLOCK_STATUS chunk: {:?}", r.chunks);
    let ch = &r.chunks[0];
    assert_eq!(
        ch.ty, REPLY_TYPE_BLOCK_STATUS,
        "BLOCK_STATUS chunk type is 5"
    );
    assert_eq!(ch.flags, REPLY_FLAG_DONE);
    let ext = extents(&ch.payload);
    assert_eq!(
        ext,
        vec![(1 << 20, 3)],
        "fresh volume: a single hole|zero extent"
    );

    // Write 64 KiB at 0: data there, hole after.
    let data = pattern(6, 65536);
    c.write(0, &data);
    let r = c.request(0, CMD_BLOCK_STATUS, 0, 1 << 20, &[]);
    let ext = extents(&r.chunks[0].payload);
    // (Exact on ext4/xfs/tmpfs; a file system may round data extents up to its block size.)
    assert_eq!(ext[0].1, 0, "first extent is data: {ext:?}");
    assert!(
        ext[0].0 >= 65536,
        "the data extent covers the write: {ext:?}"
    );
    assert_eq!(ext.last().unwrap().1, 3, "the rest is a hole: {ext:?}");
    let total: u64 = ext.iter().map(|e| e.0 as u64).sum();
    assert!(
        total <= 1 << 20,
        "extents cover {total} bytes, more than asked"
    );

    // REQ_ONE: exactly one extent.
    let r = c.request(CMD_FLAG_REQ_ONE, CMD_BLOCK_STATUS, 0, 1 << 20, &[]);
    assert_eq!(extents(&r.chunks[0].payload).len(), 1, "REQ_ONE");

    // READ: one OFFSET_DATA chunk with DONE, carrying the offset and the data.
    for flags in [0, CMD_FLAG_DF] {
        let r = c.request(flags, CMD_READ, 4096, 8192, &[]);
        assert_eq!(r.error, 0);
        assert_eq!(
            r.chunks.len(),
            1,
            "READ chunks: {:?}",
            r.chunks.iter().map(|c| c.ty).collect::<Vec<_>>()
        );
        let ch = &r.chunks[0];
        assert_eq!(ch.ty, REPLY_TYPE_OFFSET_DATA);
        assert_eq!(ch.flags, REPLY_FLAG_DONE);
        assert_eq!(
            u64::from_be_bytes(ch.payload[0..8].try_into().unwrap()),
            4096,
            "OFFSET_DATA offset"
        );
        assert_same_bytes("structured READ data", &r.data, &data[4096..4096 + 8192]);
    }

    // Non-READ success: a single NONE chunk with DONE.
    let r = c.request(0, CMD_FLUSH, 0, 0, &[]);
    assert_eq!(r.chunks.len(), 1);
    assert_eq!(
        (r.chunks[0].ty, r.chunks[0].flags),
        (REPLY_TYPE_NONE, REPLY_FLAG_DONE)
    );

    // Errors: a single ERROR chunk with DONE.
    let r = c.request(0, CMD_READ, VOL_SIZE, 512, &[]);
    assert_eq!(r.error, EINVAL);
    assert_eq!(
        (r.chunks[0].ty, r.chunks[0].flags),
        (REPLY_TYPE_ERROR, REPLY_FLAG_DONE)
    );

    // TRIM makes a hole again; WRITE_ZEROES reads back as zeroes.
    assert_eq!(c.request(0, CMD_TRIM, 0, 65536, &[]).error, 0);
    let r = c.request(0, CMD_BLOCK_STATUS, 0, 1 << 20, &[]);
    let ext = extents(&r.chunks[0].payload);
    assert!(
        ext.iter().all(|e| e.1 == 3),
        "after TRIM everything is a hole again: {ext:?}"
    );
    c.write(0, &data);
    assert_eq!(
        c.request(CMD_FLAG_NO_HOLE, CMD_WRITE_ZEROES, 0, 32768, &[])
            .error,
        0
    );
    assert_eq!(c.read(0, 32768), vec![0u8; 32768]);
    assert_same_bytes(
        "beyond the zeroed range",
        &c.read(32768, 32768),
        &data[32768..],
    );
    c.disconnect();
}

/// Decode a BLOCK_STATUS payload: context id 1, then (length, status) pairs.
fn extents(payload: &[u8]) -> Vec<(u32, u32)> {
    assert_eq!(
        u32::from_be_bytes(payload[0..4].try_into().unwrap()),
        1,
        "context id of base:allocation"
    );
    assert_eq!((payload.len() - 4) % 8, 0, "descriptor size");
    payload[4..]
        .chunks(8)
        .map(|d| {
            (
                u32::from_be_bytes(d[0..4].try_into().unwrap()),
                u32::from_be_bytes(d[4..8].try_into().unwrap()),
            )
        })
        .collect()
}

#[test]
fn thirty_two_pipelined_reads_are_all_answered() {
    let node = Node::start(CONFIG);
    for structured in [false, true] {
        let mut c = if structured {
            Client::open_structured(node.socket(), "vol")
        } else {
            Client::open(node.socket(), "vol")
        };
        // 32 blocks of different sizes and contents, written pipelined too.
        let blocks: Vec<(u64, Vec<u8>)> = (0..32u64)
            .map(|i| {
                (
                    i * 65536,
                    pattern(100 + i + 32 * structured as u64, 512 * (i as usize + 1)),
                )
            })
            .collect();
        let mut b = Vec::new();
        let mut writes = std::collections::HashSet::new();
        for (off, d) in &blocks {
            writes.insert(c.encode(&mut b, 0, CMD_WRITE, *off, d.len() as u32, d));
        }
        c.send_raw(&b);
        for _ in 0..32 {
            let r = c.recv();
            assert_eq!(r.error, 0);
            assert!(
                writes.remove(&r.cookie),
                "unexpected or duplicate write cookie {}",
                r.cookie
            );
        }

        let mut b = Vec::new();
        let mut want = std::collections::HashMap::new();
        for (off, d) in &blocks {
            let cookie = c.encode(&mut b, 0, CMD_READ, *off, d.len() as u32, &[]);
            want.insert(cookie, d.clone());
        }
        c.send_raw(&b);
        for _ in 0..32 {
            let r = c.recv();
            assert_eq!(r.error, 0);
            let d = want
                .remove(&r.cookie)
                .unwrap_or_else(|| panic!("unexpected or duplicate cookie {}", r.cookie));
            assert_same_bytes(&format!("pipelined READ cookie {}", r.cookie), &r.data, &d);
        }
        assert!(want.is_empty(), "cookies never answered: {:?}", want.keys());
        c.disconnect();
    }
}

#[test]
fn garbage_after_the_greeting_never_crashes_the_node() {
    let mut node = Node::start(CONFIG);
    let socket = node.socket().to_path_buf();
    let threads: Vec<_> = (0..20u64)
        .map(|i| {
            let socket = socket.clone();
            std::thread::spawn(move || {
                let junk = pattern(1000 + i, 4096);
                let mut s = match i % 4 {
                    // Garbage instead of client flags.
                    0 => connect_greeted(&socket),
                    // Valid flags, garbage options.
                    1 => {
                        let mut s = connect_greeted(&socket);
                        s.write_all(&3u32.to_be_bytes()).unwrap();
                        s
                    }
                    // A valid option header with a junk payload, then more junk.
                    2 => {
                        let mut h = Handshake::start(&socket);
                        h.send_option(OPT_GO, &junk[..1000]);
                        h.s
                    }
                    // In transmission, garbage instead of requests.
                    _ => Handshake::start(&socket).go("vol").s,
                };
                // The server may hang up mid-way: write errors are expected.
                let _ = s.write_all(&junk);
                let _ = s.flush();
                drop(s);
            })
        })
        .collect();
    for t in threads {
        t.join().expect("garbage thread");
    }
    node.assert_alive();
    let mut c = Client::open(node.socket(), "vol");
    let data = pattern(7, 65536);
    c.write(0, &data);
    assert_same_bytes("good client after garbage", &c.read(0, 65536), &data);
    c.disconnect();
    node.assert_alive();
}
