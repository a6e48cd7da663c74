#!/usr/bin/env python3
"""Hostile NFS clients against the node (`qoslab serve --listen-nfs`), measured.

1. Held WRITE flood: 20 connections x 256 pipelined 64 KiB UNSTABLE WRITEs to a NAS volume
   under a 2 IOPS ceiling, sent for 3 s. Reports the node's RSS before and at its peak; the
   time until the node lets go of the clients once they reset their connections (its
   descriptor count back to idle), the time a new client's WRITE then waits, and how long
   SIGTERM takes with 5 such clients still holding calls. (Issue 32: RSS 70 -> 391 MiB, the
   writes ran on after the clients left, SIGTERM waited ~42 min.)
2. Unadmitted idle connections: 1,100 connections from 127.0.0.2, which no export policy
   admits, kept open; how many the node closed at once, and the time of an admitted
   client's MOUNT and listing (nfs-ls from 127.0.0.1) meanwhile. (Issue 32: 1,030 such
   connections locked the admitted client out.)

Usage: bench/nfs-bounds.py            (QOSLAB=target/release/qoslab)
Needs: cargo build --release; root (reserved source ports, as the kernel client); nfs-ls.
Prints Markdown to stdout, progress to stderr.
"""

import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

QOSLAB = os.environ.get("QOSLAB", "target/release/qoslab")


def log(msg):
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- a raw ONC RPC / NFSv3 client (record marking, AUTH_SYS root) -----------------------

def opaque(b):
    return struct.pack(">I", len(b)) + b + b"\0" * ((4 - len(b) % 4) % 4)


def auth_sys(uid=0, gid=0):
    body = struct.pack(">I", 1) + opaque(b"bench") + struct.pack(">III", uid, gid, 0)
    return struct.pack(">I", 1) + opaque(body)


def call(xid, prog, vers, proc, args):
    head = struct.pack(">IIIIII", xid, 0, 2, prog, vers, proc)
    msg = head + auth_sys() + struct.pack(">II", 0, 0) + args
    return struct.pack(">I", 0x80000000 | len(msg)) + msg


def connect(port, src="127.0.0.1", reserved=True):
    """A TCP connection to the node, from a reserved port (below 1024) when asked."""
    for p in (range(600, 1024) if reserved else [0]):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((src, p))
            s.connect(("127.0.0.1", port))
            return s
        except OSError:
            s.close()
    raise OSError(f"no port to connect from {src}")


def reply(s):
    """The next reply record: its body after the accepted-reply header."""
    def exact(n):
        b = b""
        while len(b) < n:
            c = s.recv(n - len(b))
            if not c:
                raise EOFError("the node closed the connection")
            b += c
        return b
    (h,) = struct.unpack(">I", exact(4))
    rec = exact(h & 0x7FFFFFFF)
    return rec[24:]  # xid, REPLY, accepted, verf (flavor, len 0), accept_stat


def mount(port, path):
    s = connect(port)
    s.sendall(call(1, 100005, 3, 1, opaque(path.encode())))
    body = reply(s)
    s.close()
    (st, n) = struct.unpack(">II", body[:8])
    assert st == 0, f"MNT {path}: {st}"
    return body[8:8 + n]


def create(s, dirfh, name):
    sattr = struct.pack(">IIIIIII", 0, 0, 0, 0, 0, 0, 0)
    s.sendall(call(2, 100003, 3, 8, opaque(dirfh) + opaque(name.encode()) + struct.pack(">I", 0) + sattr))
    body = reply(s)
    assert struct.unpack(">I", body[:4])[0] == 0, "CREATE"
    (n,) = struct.unpack(">I", body[8:12])
    return body[12:12 + n]


def write_call(xid, fh, off, data):
    args = opaque(fh) + struct.pack(">QII", off, len(data), 0) + opaque(data)
    return call(xid, 100003, 3, 7, args)


# --- the node -----------------------------------------------------------------------------

class Node:
    def __init__(self, config):
        self.dir = tempfile.mkdtemp(prefix="qoslab-bounds.")
        cfg = os.path.join(self.dir, "node.toml")
        open(cfg, "w").write(config)
        self.args = [QOSLAB, "serve", "--config", cfg, "--data-dir", os.path.join(self.dir, "data"),
                     "--listen-unix", os.path.join(self.dir, "nbd.sock"), "--listen-tcp", "127.0.0.1:0",
                     "--listen-http", "127.0.0.1:0", "--insecure-http", "--listen-nfs", "127.0.0.1:0"]
        self.p = subprocess.Popen(self.args, stdout=subprocess.PIPE, stderr=open(os.path.join(self.dir, "stderr"), "w"),
                                  text=True)
        self.port = None
        for line in self.p.stdout:
            if line.startswith("qoslab: nfs: "):
                self.port = int(line.split()[2].rsplit(":", 1)[1])
            if line.startswith("qoslab: ready"):
                break
        assert self.port, "no NFS port"
        threading.Thread(target=lambda: [None for _ in self.p.stdout], daemon=True).start()

    def rss_mib(self):
        for l in open(f"/proc/{self.p.pid}/status"):
            if l.startswith("VmRSS:"):
                return int(l.split()[1]) / 1024
        return 0.0

    def fds(self):
        return len(os.listdir(f"/proc/{self.p.pid}/fd"))

    def stop(self):
        t = time.time()
        self.p.terminate()
        self.p.wait(timeout=600)
        return time.time() - t

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        subprocess.run(["rm", "-rf", self.dir])


def flood(port, fh, seconds, hold, out):
    """Pipeline 256 64 KiB WRITEs to `fh` for `seconds`; then reset (or hold, then reset)."""
    s = connect(port)
    data = b"".join(write_call(i + 1, fh, i << 16, b"\7" * 65536) for i in range(256))
    s.setblocking(False)
    sent, end = 0, time.time() + seconds
    while sent < len(data) and time.time() < end:
        try:
            sent += s.send(data[sent:])
        except BlockingIOError:
            time.sleep(0.01)
    out.append(sent)
    if hold:
        time.sleep(hold)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    s.close()


def held_write_flood():
    node = Node('[[policy]]\nname = "two"\nfixed = { max_throughput_iops = 2 }\n'
                '[[volume]]\nname = "slow"\nsize = "1GiB"\npolicy = "two"\nnas_path = "/slow"\n')
    try:
        root = mount(node.port, "/slow")
        setup = connect(node.port)
        files = [create(setup, root, f"f{i}") for i in range(20)]
        idle_fds, base = node.fds(), node.rss_mib()
        log(f"flood: 20 connections x 256 x 64 KiB WRITEs at 2 IOPS (RSS {base:.0f} MiB)")
        sent = []
        ts = [threading.Thread(target=flood, args=(node.port, fh, 3, 0, sent)) for fh in files]
        for t in ts:
            t.start()
        peak, t0 = base, time.time()
        while any(t.is_alive() for t in ts):
            peak = max(peak, node.rss_mib())
            time.sleep(0.1)
        t0 = time.time()
        while node.fds() > idle_fds and time.time() - t0 < 60:
            time.sleep(0.05)
        released = time.time() - t0
        t1 = time.time()
        s = connect(node.port)
        s.sendall(write_call(9, files[0], 0, b"next"))
        reply(s)
        waited = time.time() - t1
        s.close()
        holders = [threading.Thread(target=flood, args=(node.port, fh, 2, 120, [])) for fh in files[:5]]
        for t in holders:
            t.daemon = True
            t.start()
        time.sleep(2.5)
        stopped = node.stop()
        return dict(base=base, peak=peak, sent=sum(sent) / 2**20, released=released, waited=waited,
                    stopped=stopped)
    finally:
        node.close()


def unadmitted_idle():
    node = Node('[[export_policy]]\nname = "one"\nrule = [{ clients = ["127.0.0.1"], superuser = ["sys"] }]\n'
                '[[volume]]\nname = "v"\nsize = "64MiB"\nnas_path = "/v"\nexport_policy = "one"\n')
    try:
        log("1,100 idle connections from 127.0.0.2 (no policy admits it)")
        idle = [connect(node.port, "127.0.0.2", reserved=False) for _ in range(1100)]
        time.sleep(1)
        closed = 0
        for s in idle:
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except OSError:
                closed += 1
        times = []
        url = f"nfs://127.0.0.1/v?nfsport={node.port}&mountport={node.port}"
        for _ in range(5):
            t = time.time()
            r = subprocess.run(["nfs-ls", url], capture_output=True)
            times.append(time.time() - t)
            assert r.returncode == 0, r.stderr
        for s in idle:
            s.close()
        return dict(closed=closed, mount_ms=statistics.median(times) * 1000, worst_ms=max(times) * 1000)
    finally:
        node.close()


def main():
    if not os.access(QOSLAB, os.X_OK):
        sys.exit(f"nfs-bounds.py: {QOSLAB} missing: cargo build --release")
    print(f"load before: {open('/proc/loadavg').read().split()[:3]}", file=sys.stderr)
    f = held_write_flood()
    u = unadmitted_idle()
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}", file=sys.stderr)
    print("| held WRITE flood (20 x 256 x 64 KiB, 2 IOPS) | |")
    print("|---|---|")
    print(f"| sent by the clients in 3 s | {f['sent']:.0f} MiB |")
    print(f"| node RSS idle -> peak | {f['base']:.0f} -> {f['peak']:.0f} MiB (+{f['peak'] - f['base']:.0f}) |")
    print(f"| clients reset: node lets go of them in | {f['released']:.2f} s |")
    print(f"| then a new client's WRITE waits | {f['waited'] * 1000:.0f} ms |")
    print(f"| SIGTERM with 5 clients holding calls: exit in | {f['stopped']:.2f} s |")
    print()
    print("| 1,100 idle connections from an unadmitted address | |")
    print("|---|---|")
    print(f"| closed by the node within 1 s | {u['closed']:,} of 1,100 |")
    print(f"| admitted client's MOUNT + listing (nfs-ls), median of 5 | {u['mount_ms']:.0f} ms (worst {u['worst_ms']:.0f}) |")


if __name__ == "__main__":
    main()
