#!/usr/bin/env python3
"""GET /api/storage/volumes latency, HTTPS vs plain HTTP, against two release nodes.

usage: bench/api_latency.py HTTPS_PORT CA_FILE HTTP_PORT N

Start two nodes with the same volumes and a user admin / Netapp1! in each, e.g.
  for d in hs h; do printf 'Netapp1!\n' | qoslab user create admin --password-stdin --data-dir $d; done
  qoslab serve --config e.toml --data-dir hs --listen-unix hs/nbd.sock --listen-http 127.0.0.1:18443 &
  qoslab serve --config e.toml --data-dir h --listen-unix h/nbd.sock --listen-http 127.0.0.1:18480 --insecure-http &
  env -u REQUESTS_CA_BUNDLE bench/api_latency.py 18443 hs/tls/ca-cert.pem 18480 300
Prints p50/p99 per path, scheme, and keep-alive vs a new connection per request."""
import statistics, sys, time, requests
hs_port, ca, h_port, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
auth = ("admin", "Netapp1!")
def run(url, verify, session):
    lat = []
    s = requests.Session() if session else None
    for _ in range(n):
        t = time.perf_counter()
        if s:
            r = s.get(url, verify=verify, auth=auth)
        else:
            r = requests.get(url, verify=verify, auth=auth, headers={"Connection": "close"})
        lat.append((time.perf_counter() - t) * 1e6)
        assert r.status_code == 200, r.text
    lat.sort()
    return statistics.median(lat), lat[int(len(lat) * 0.99) - 1]
for path in ["/api/storage/volumes", "/api/storage/volumes?fields=*"]:
    for name, url, verify in [("https", f"https://localhost:{hs_port}{path}", ca),
                              ("http", f"http://localhost:{h_port}{path}", False)]:
        for session in (True, False):
            run(url, verify, session)  # warm
            p50, p99 = run(url, verify, session)
            print(f"{path:34} {name:5} {'keep-alive' if session else 'new conn  '} p50 {p50:7.0f} us  p99 {p99:7.0f} us")
