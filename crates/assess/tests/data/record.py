#!/usr/bin/env python3
"""Turn one job of a stored qoslab run into a recorded-samples fixture for tests/recorded.rs.

    qoslab results export RUN --db DB --format json | \
        python3 crates/assess/tests/data/record.py JOB "what was recorded" > FIXTURE.json

JOB is the job's name. The fixture keeps, unchanged, what the tests judge:
- `hosts`: the job's host tool-set series as stored (toolsets::HostSeries, pressure included);
- `window_ms`: the judged window on fio's clock (the job's runtime);
- `node_windows`, `client_windows`: the node's and fio's read+write IOPS per window over the
  span harness::kept compares them on (windows whose middle lies in the window less 500 ms
  at each end);
- `node`, `client`: each side's mean over that span, each window weighted by the time it
  covered (the time since the window before it).
"""
import json
import sys

job_name, what = sys.argv[1], sys.argv[2]
run = json.load(sys.stdin)
job = next(j for j in run["jobs"] if j["name"] == job_name)
series = next(s for s in run["series"] if s["job_id"] == job["id"])
plan_runtime = run.get("runtime_s") or 0
window_ms = int(round((job.get("runtime_s") or plan_runtime) * 1000))
W = 500

node, prev = [], None
for n in series.get("node", []):
    if job.get("volume") and n["volume"] != job["volume"]:
        continue
    secs = (n["t_ms"] - prev) / 1000 if prev is not None and n["t_ms"] > prev else W / 1000
    prev = n["t_ms"]
    mid = n["t_ms"] - secs * 500
    if W <= mid <= window_ms - W:
        node.append((n["read_iops"] + n["write_iops"], secs))

by_t = {}
for f in series.get("fio", []):
    if f["direction"] in ("read", "write"):
        by_t[f["t_ms"]] = by_t.get(f["t_ms"], 0) + f["iops"]
client, prev = [], None
for t, v in sorted(by_t.items()):
    secs = (t - prev) / 1000 if prev is not None and t > prev else W / 1000
    prev = t
    if W <= t - secs * 500 <= window_ms - W:
        client.append((v, secs))

time = sum(s for _, s in node)
ctime = sum(s for _, s in client)
json.dump(
    {
        "recorded": what,
        "job": job_name,
        "window_ms": window_ms,
        "node": sum(r * s for r, s in node) / time if time else 0,
        "client": sum(r * s for r, s in client) / ctime if ctime else 0,
        "node_windows": [r for r, _ in node],
        "client_windows": [r for r, _ in client],
        "diagnosis": job.get("diagnosis"),
        "hosts": series.get("hosts", []),
    },
    sys.stdout,
    indent=1,
)
print()
