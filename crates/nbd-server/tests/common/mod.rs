//! Shared by the storage node's test binaries: a minimal NBD client handshake, a temp
//! directory removed on drop (`test_support::TestDir`), and a closed-loop client on
//! tokio's clock (`load`).
#![allow(dead_code)] // each test binary uses its part

use nbd_proto::*;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

pub mod load;

/// Handshake with GO for `export` (simple replies), returning the export size.
pub async fn handshake<S: AsyncRead + AsyncWrite + Unpin>(c: &mut S, export: &str) -> u64 {
    let mut greet = [0u8; 18];
    c.read_exact(&mut greet).await.unwrap();
    assert_eq!(&greet[0..8], b"NBDMAGIC");
    c.write_u32(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES)
        .await
        .unwrap();
    let mut data = Vec::new();
    data.extend_from_slice(&(export.len() as u32).to_be_bytes());
    data.extend_from_slice(export.as_bytes());
    data.extend_from_slice(&0u16.to_be_bytes());
    c.write_u64(IHAVEOPT).await.unwrap();
    c.write_u32(OPT_GO).await.unwrap();
    c.write_u32(data.len() as u32).await.unwrap();
    c.write_all(&data).await.unwrap();
    let mut size = 0;
    loop {
        let _magic = c.read_u64().await.unwrap();
        let _opt = c.read_u32().await.unwrap();
        let ty = c.read_u32().await.unwrap();
        let len = c.read_u32().await.unwrap();
        let mut body = vec![0u8; len as usize];
        c.read_exact(&mut body).await.unwrap();
        if ty == REP_INFO && body[0..2] == INFO_EXPORT.to_be_bytes() {
            size = u64::from_be_bytes(body[2..10].try_into().unwrap());
        }
        if ty == REP_ACK {
            return size;
        }
        assert_eq!(ty & 0x8000_0000, 0, "option error {ty:x}");
    }
}

/// A client of `node`'s export `export` over an in-process pipe of `buf` bytes, past the
/// handshake, and its connection's task on the server.
pub async fn connect(
    node: &std::sync::Arc<storage_node::Node>,
    export: &str,
    buf: usize,
) -> (
    tokio::io::DuplexStream,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let (mut client, server_side) = tokio::io::duplex(buf);
    let conn = tokio::spawn(nbd_server::connection(server_side, node.clone(), None));
    handshake(&mut client, export).await;
    (client, conn)
}

/// 4 KiB READs for every cookie in `cookies` (see [`read_4k`]), as one batch.
pub fn reads_4k(cookies: std::ops::RangeInclusive<u64>) -> Vec<u8> {
    let mut out = Vec::new();
    for cookie in cookies {
        read_4k(&mut out, cookie);
    }
    out
}

/// A client on export `v` (a 1 MiB pipe) that has sent the 4 KiB reads `cookies` at once,
/// pipelined, and its connection's task.
pub async fn pipelined(
    node: &std::sync::Arc<storage_node::Node>,
    cookies: std::ops::RangeInclusive<u64>,
) -> (
    tokio::io::DuplexStream,
    tokio::task::JoinHandle<std::io::Result<()>>,
) {
    let (mut client, conn) = connect(node, "v", 1 << 20).await;
    client.write_all(&reads_4k(cookies)).await.unwrap();
    (client, conn)
}

/// Append a 4 KiB READ whose cookie is `cookie` and whose offset is `cookie` x 4 KiB.
pub fn read_4k(out: &mut Vec<u8>, cookie: u64) {
    encode_request(
        out,
        &Request {
            flags: 0,
            command: CMD_READ,
            cookie,
            offset: cookie * 4096,
            length: 4096,
        },
    );
}

#[allow(unused_imports)] // not every test binary makes a directory
pub use test_support::TestDir;
