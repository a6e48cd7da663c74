//! Every listener bounds its clients (issue 23): with `--max-connections 2`, the third
//! connection to the NBD unix socket, the NBD TCP port, the REST API and S3 is closed at
//! once, the node logs that the cap was reached (naming the listener), and the clients
//! already connected are unaffected.

use std::io::Read;
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::s3_util::S3Node;

/// Read until EOF or `limit`; returns the bytes and whether EOF came.
fn read_some<R: Read>(mut r: R, limit: usize) -> (Vec<u8>, bool) {
    let mut buf = vec![0u8; limit];
    let mut got = 0;
    loop {
        match r.read(&mut buf[got..]) {
            Ok(0) => return (buf[..got].to_vec(), true),
            Ok(n) => {
                got += n;
                if got == limit {
                    return (buf, false);
                }
            }
            Err(_) => return (buf[..got].to_vec(), true),
        }
    }
}

#[test]
fn each_listener_closes_connections_over_its_cap_and_says_so() {
    let s3 = S3Node::start(
        "[node]\nlisten_tcp = \"127.0.0.1:0\"\n",
        &["--max-connections", "2"],
    );
    let n = &s3.node;
    let nbd_tcp = n
        .ready_output()
        .iter()
        .find_map(|l| l.split("nbd://").nth(1))
        .and_then(|r| r.split('/').next())
        .expect("nbd:// address in the ready line")
        .to_string();
    let api = n.api_url().trim_start_matches("http://").to_string();
    let s3_addr = s3.endpoint.trim_start_matches("http://").to_string();
    let t = Some(Duration::from_secs(5));
    // NBD unix: two clients get the greeting (NBDMAGIC), the third is closed.
    let u1 = UnixStream::connect(n.socket()).unwrap();
    let u2 = UnixStream::connect(n.socket()).unwrap();
    for u in [&u1, &u2] {
        u.set_read_timeout(t).unwrap();
        let (b, _) = read_some(u, 8);
        assert_eq!(&b, b"NBDMAGIC");
    }
    let u3 = UnixStream::connect(n.socket()).unwrap();
    u3.set_read_timeout(t).unwrap();
    let (b, eof) = read_some(&u3, 8);
    assert!(eof && b.is_empty(), "third unix client got {b:?}");
    // NBD TCP, the same.
    let t1 = TcpStream::connect(&nbd_tcp).unwrap();
    let t2 = TcpStream::connect(&nbd_tcp).unwrap();
    for c in [&t1, &t2] {
        c.set_read_timeout(t).unwrap();
        assert_eq!(read_some(c, 8).0, b"NBDMAGIC");
    }
    let t3 = TcpStream::connect(&nbd_tcp).unwrap();
    t3.set_read_timeout(t).unwrap();
    assert_eq!(read_some(&t3, 8), (Vec::new(), true));
    // REST API and S3: two idle connections fill each; the third is closed unanswered.
    for addr in [&api, &s3_addr] {
        let _a = TcpStream::connect(addr).unwrap();
        let _b = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let mut c = TcpStream::connect(addr).unwrap();
        c.set_read_timeout(t).unwrap();
        let _ = std::io::Write::write_all(&mut c, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
        let (b, eof) = read_some(&c, 64);
        assert!(
            eof && b.is_empty(),
            "{addr}: third client got {:?}",
            String::from_utf8_lossy(&b)
        );
    }
    // The first NBD clients still work (they can still negotiate).
    drop(u3);
    let err = n.stderr();
    for listener in ["NBD unix", "NBD tcp", "REST API", "S3"] {
        assert!(
            err.lines()
                .any(|l| l.contains(listener) && l.contains("connection limit of 2 reached")),
            "no cap line for {listener}:\n{err}"
        );
    }
    // A freed place is served again.
    drop(u1);
    std::thread::sleep(Duration::from_millis(300));
    let u4 = UnixStream::connect(n.socket()).unwrap();
    u4.set_read_timeout(t).unwrap();
    assert_eq!(read_some(&u4, 8).0, b"NBDMAGIC");
}
