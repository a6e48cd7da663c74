#!/usr/bin/env python3
"""Helper for bench/peers.sh and bench/accuracy.sh (stdlib only).

Subcommands:
  meta            print a JSON object describing the machine/tool versions
  summarize       reduce one fio JSON output to one JSON line (appended by caller)
  failed          emit a JSON line recording a failed/skipped measurement
  peers-report    Markdown tables + results JSON for peers.sh
  accuracy-report Markdown table + results JSON for accuracy.sh

Every figure printed comes from the fio JSON files / records passed in.
"""
import argparse
import json
import statistics
import sys
from datetime import datetime, timezone

MIB = 1 << 20

# peers.sh workloads: key -> (label, primary metric)
PEER_JOBS = [
    ("randread4k_qd32", "4k randread QD32", "iops"),
    ("randwrite4k_qd32", "4k randwrite QD32", "iops"),
    ("seqread1m_qd8", "1M seq read QD8", "mib_s"),
    ("randread4k_qd1", "4k randread QD1", "p50_us"),
]
METRIC_LABEL = {"iops": "IOPS", "mib_s": "MiB/s", "p50_us": "p50 µs"}
# higher is better for throughput metrics, lower for latency
HIGHER_BETTER = {"iops": True, "mib_s": True, "p50_us": False}

PEER_SERVERS = ["qoslab", "qoslab-far", "nbdkit", "qsd", "qoslab-base", "qoslab-base-far"]
SERVER_LABEL = {
    "qoslab": "qoslab (no policy)",
    "qoslab-far": "qoslab (far ceiling)",
    "nbdkit": "nbdkit file",
    "qsd": "qemu-storage-daemon",
    "qoslab-base": "base qoslab (no policy)",
    "qoslab-base-far": "base qoslab (far ceiling)",
}
# Ratio rows: the peers, the policy's overhead, and (when QOSLAB_BASE ran) this build
# against the base build.
RATIO_PAIRS = (("qoslab", "nbdkit"), ("qoslab", "qsd"), ("qoslab-far", "qoslab"),
               ("qoslab", "qoslab-base"), ("qoslab-far", "qoslab-base-far"))
OVERHEAD_TARGET_PCT = 5.0


def load_fio(path):
    """fio's nbd engine may print text before the JSON: parse from the first '{'."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    start = text.find("{")
    if start < 0:
        raise ValueError(f"no JSON object in {path}")
    return json.loads(text[start:])


def summarize_fio(doc):
    jobs = doc.get("jobs") or []
    if not jobs:
        raise ValueError("fio JSON has no jobs")
    job = jobs[0]
    if job.get("error"):
        raise ValueError(f"fio job error {job['error']}")
    # choose the direction that actually did I/O
    side = max(("read", "write"), key=lambda s: job.get(s, {}).get("total_ios", 0))
    st = job[side]
    pct = st.get("clat_ns", {}).get("percentile", {})

    def us(key):
        v = pct.get(key)
        return None if v is None else v / 1000.0

    return {
        "direction": side,
        "iops": st["iops"],
        "bw_bytes": st["bw_bytes"],
        "mib_s": st["bw_bytes"] / MIB,
        "p50_us": us("50.000000"),
        "p99_us": us("99.000000"),
        "clat_mean_us": st.get("clat_ns", {}).get("mean", 0) / 1000.0,
        "total_ios": st["total_ios"],
        "runtime_ms": st["runtime"],
        "fio_usr_cpu_pct": job.get("usr_cpu"),
        "fio_sys_cpu_pct": job.get("sys_cpu"),
    }


def cmd_meta(a):
    print(json.dumps({
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "fio": a.fio, "kernel": a.kernel, "nproc": int(a.nproc), "cpu": a.cpu,
        "nbdkit": a.nbdkit, "qemu_storage_daemon": a.qsd,
        "qoslab": a.qoslab, "qoslab_path": a.qoslab_path, "git": a.git,
        "pinned": a.pin == "1", "runtime_s": float(a.runtime), "ramp_s": float(a.ramp),
        "loadavg_start": a.loadavg_start, "loadavg_end": a.loadavg_end,
    }, indent=2))


def cmd_summarize(a):
    rec = {"server": a.server, "job": a.job}
    if a.round is not None:
        rec["round"] = int(a.round)
    if a.limit_kind:
        rec["limit_kind"] = a.limit_kind
        rec["limit"] = float(a.limit) if a.limit is not None else None
    try:
        s = summarize_fio(load_fio(a.fio_json))
        rec.update(s)
        if a.server_cpu_s is not None and s["total_ios"]:
            cpu = float(a.server_cpu_s)
            rec["server_cpu_s"] = cpu
            # CPU over the whole fio run (incl. ramp) vs I/Os counted after ramp:
            # comparable across servers, slightly pessimistic in absolute terms.
            rec["server_cpu_s_per_s"] = cpu / ((s["runtime_ms"] / 1000.0) + float(a.ramp or 0))
    except (OSError, ValueError, KeyError) as e:
        rec["error"] = f"unparseable fio output: {e}"
    print(json.dumps(rec))


def cmd_failed(a):
    rec = {"server": a.server, "job": a.job, "error": a.reason}
    if a.round is not None:
        rec["round"] = int(a.round)
    if a.skipped:
        rec["skipped"] = True
    if a.limit_kind:
        rec["limit_kind"] = a.limit_kind
        rec["limit"] = float(a.limit) if a.limit is not None else None
    print(json.dumps(rec))


def read_records(path):
    recs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line:
                recs.append(json.loads(line))
    return recs


def fmt(v, metric=None):
    if v is None:
        return "n/a"
    if metric == "p50_us" or metric == "us":
        return f"{v:,.1f}"
    if metric == "ratio":
        return f"{v:.3f}"
    if abs(v) >= 100:
        return f"{v:,.0f}"
    return f"{v:,.2f}"


def md_table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


AGG_METRICS = ("iops", "bw_bytes", "mib_s", "p50_us", "p99_us", "clat_mean_us",
               "server_cpu_s_per_s", "cpu_us_per_req")


def aggregate(recs):
    """Group per-round records by (server, job); the median of each metric over the
    successful rounds, plus the spread of the primary metrics."""
    groups = {}
    for r in recs:
        cpu, iops = r.get("server_cpu_s_per_s"), r.get("iops")
        if cpu is not None and iops:
            # Server CPU time per request: robust where wall-clock rates are not (a shared
            # machine steals time from client and server alike, not from this quotient).
            r["cpu_us_per_req"] = cpu * 1e6 / iops
        groups.setdefault((r["server"], r["job"]), []).append(r)
    out = {}
    for key, rs in groups.items():
        ok = [r for r in rs if "error" not in r]
        if not ok:
            out[key] = dict(rs[0])
            continue
        agg = {"server": key[0], "job": key[1], "rounds": len(ok),
               "failed_rounds": len(rs) - len(ok)}
        for m in AGG_METRICS:
            vals = [r[m] for r in ok if r.get(m) is not None]
            agg[m] = statistics.median(vals) if vals else None
            if vals and len(vals) > 1 and m in ("iops", "mib_s", "p50_us"):
                agg[m + "_min"] = min(vals)
                agg[m + "_max"] = max(vals)
        out[key] = agg
    return out


def cmd_peers_report(a):
    meta = json.load(open(a.meta, encoding="utf-8"))
    recs = read_records(a.results)
    by = aggregate(recs)
    rounds = max((r.get("rounds", 1) for r in by.values()), default=1)
    servers = [s for s in PEER_SERVERS if any(r["server"] == s for r in recs)]

    def val(server, job, metric):
        r = by.get((server, job))
        if not r or "error" in r:
            return None
        return r.get(metric)

    lines = []
    lines.append(f"## Peer comparison ({meta['date_utc']})\n")
    lines.append(f"fio {meta['fio']}, kernel {meta['kernel']}, nproc {meta['nproc']}, "
                 f"CPU {meta['cpu']}, pinned={meta['pinned']}, runtime {meta['runtime_s']:g}s "
                 f"+ ramp {meta['ramp_s']:g}s, file {a.size_mib} MiB (prefilled, page-cached), "
                 f"{rounds} round(s) per server" + (" -- figures are medians" if rounds > 1 else "") + "\n")
    lines.append(f"nbdkit: {meta['nbdkit']}; qsd: {meta['qemu_storage_daemon']}; "
                 f"qoslab: {meta['qoslab']} (git {meta['git']}); load average at start "
                 f"{meta['loadavg_start']}, at end {meta['loadavg_end']} (includes this benchmark)\n")

    # main table: primary metric per job
    header = ["server"] + [f"{lbl} ({METRIC_LABEL[m]})" for _, lbl, m in PEER_JOBS]
    rows = []
    for s in servers:
        row = [SERVER_LABEL.get(s, s)]
        for job, _, m in PEER_JOBS:
            r = by.get((s, job))
            if r is None:
                row.append("not run")
            elif "error" in r:
                row.append("SKIPPED" if r.get("skipped") else "FAILED")
            else:
                row.append(fmt(r[m], m))
        rows.append(row)
    lines.append(md_table(header, rows))
    lines.append("")

    # detail table
    header = ["server", "job", "IOPS", "MiB/s", "p50 µs", "p99 µs", "server CPU (cores)",
              "spread of primary metric (min–max)"]
    rows = []
    for s in servers:
        for job, lbl, _ in PEER_JOBS:
            r = by.get((s, job))
            if r is None:
                continue
            if "error" in r:
                tag = "SKIPPED: " if r.get("skipped") else "FAILED: "
                rows.append([SERVER_LABEL.get(s, s), lbl, tag + r["error"], "", "", "", "", ""])
                continue
            pm = dict((j, m) for j, _, m in PEER_JOBS)[job]
            spread = (f"{fmt(r[pm + '_min'], pm)}–{fmt(r[pm + '_max'], pm)}"
                      if pm + "_min" in r else "")
            rows.append([SERVER_LABEL.get(s, s), lbl, fmt(r["iops"]), fmt(r["mib_s"]),
                         fmt(r["p50_us"], "us"), fmt(r["p99_us"], "us"),
                         fmt(r.get("server_cpu_s_per_s"), "ratio"), spread])
    lines.append("<details><summary>all metrics</summary>\n")
    lines.append(md_table(header, rows))
    lines.append("\n</details>\n")

    # ratios
    ratios = {}
    header = ["ratio"] + [f"{lbl} ({METRIC_LABEL[m]})" for _, lbl, m in PEER_JOBS]
    rows = []
    for num, den in RATIO_PAIRS:
        if num not in servers or den not in servers:
            continue
        key = f"{num}/{den}"
        row = [f"{SERVER_LABEL[num]} / {SERVER_LABEL[den]}"]
        ratios[key] = {}
        for job, _, m in PEER_JOBS:
            x, y = val(num, job, m), val(den, job, m)
            rv = (x / y) if (x is not None and y) else None
            ratios[key][job] = rv
            row.append(fmt(rv, "ratio"))
        rows.append(row)
    lines.append("### Ratios (throughput: > 1 means qoslab faster; p50 latency: < 1 means qoslab faster)\n")
    lines.append(md_table(header, rows))
    lines.append("")

    # server CPU per request
    header = ["server CPU per request (µs)"] + [lbl for _, lbl, _ in PEER_JOBS]
    rows = []
    for s in servers:
        rows.append([SERVER_LABEL.get(s, s)] + [fmt(val(s, job, "cpu_us_per_req"), "us")
                                                for job, _, _ in PEER_JOBS])
    for num, den in RATIO_PAIRS:
        if num not in servers or den not in servers:
            continue
        row = [f"ratio {SERVER_LABEL[num]} / {SERVER_LABEL[den]}"]
        for job, _, _ in PEER_JOBS:
            x, y = val(num, job, "cpu_us_per_req"), val(den, job, "cpu_us_per_req")
            row.append(fmt(x / y, "ratio") if (x is not None and y) else "n/a")
        rows.append(row)
    lines.append("### Server CPU per request (lower is better; robust on a shared machine)\n")
    lines.append(md_table(header, rows))
    lines.append("")

    # policy overhead: positive = far-ceiling policy is worse
    overhead = {}
    row = ["far-ceiling policy overhead vs no policy"]
    for job, _, m in PEER_JOBS:
        x, y = val("qoslab-far", job, m), val("qoslab", job, m)
        if x is None or not y:
            o = None
        elif HIGHER_BETTER[m]:
            o = (1 - x / y) * 100
        else:
            o = (x / y - 1) * 100
        overhead[job] = o
        row.append("n/a" if o is None else
                   f"{o:+.1f}% {'ok' if o < OVERHEAD_TARGET_PCT else 'OVER TARGET'}")
    lines.append(f"### Policy overhead (target < {OVERHEAD_TARGET_PCT:g}%; positive = slower with policy)\n")
    lines.append(md_table(["", *[lbl for _, lbl, _ in PEER_JOBS]], [row]))
    lines.append("")
    if a.notes:
        for n in a.notes:
            lines.append(f"> {n}")
        lines.append("")

    doc = {"meta": meta, "size_mib": int(a.size_mib), "jobs": [j for j, _, _ in PEER_JOBS],
           "rounds": rounds, "summary": list(by.values()), "results": recs, "ratios": ratios, "policy_overhead_pct": overhead,
           "notes": a.notes or []}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    print("\n".join(lines))


def cmd_accuracy_report(a):
    meta = json.load(open(a.meta, encoding="utf-8"))
    recs = read_records(a.results)

    def achieved(r):
        if r is None or "error" in r:
            return None
        return r["iops"] if r["limit_kind"] == "iops" else r["mib_s"]

    base = {}
    for r in recs:
        if r.get("limit") in (None, 0):
            base[(r["server"], r["limit_kind"])] = achieved(r)

    lines = [f"## Ceiling accuracy ({meta['date_utc']})\n",
             f"fio {meta['fio']}, kernel {meta['kernel']}, nproc {meta['nproc']}, CPU {meta['cpu']}, "
             f"pinned={meta['pinned']}, runtime {meta['runtime_s']:g}s + ramp {meta['ramp_s']:g}s; "
             f"IOPS: {a.iops_workload}; bandwidth: {a.bw_workload}\n",
             f"qsd: {meta['qemu_storage_daemon']} (throttle-group); qoslab: {meta['qoslab']} (git {meta['git']}); "
             f"load average at start {meta['loadavg_start']}, at end {meta['loadavg_end']} (includes this benchmark)\n"]

    keys = []
    for r in recs:
        k = (r["limit_kind"], r.get("limit") or 0)
        if k not in keys:
            keys.append(k)
    keys.sort(key=lambda k: (k[0] != "iops", k[1] == 0, k[1]))

    header = ["limit", "qoslab achieved", "qoslab error %", "qsd achieved", "qsd error %"]
    rows = []
    table = []
    flagged = False
    by = {(r["server"], r["limit_kind"], r.get("limit") or 0): r for r in recs}
    for kind, limit in keys:
        unit = "IOPS" if kind == "iops" else "MiB/s"
        row = [f"{limit:,.0f} {unit}" if limit else f"none ({unit}, unthrottled capacity)"]
        entry = {"limit_kind": kind, "limit": limit or None}
        for s in ("qoslab", "qsd"):
            r = by.get((s, kind, limit))
            v = achieved(r)
            if r is None:
                row += ["not run", ""]
                entry[s] = None
                continue
            if v is None:
                row += ["FAILED", ""]
                entry[s] = {"error": r.get("error")}
                continue
            cell = fmt(v)
            e = None
            if limit:
                e = (v - limit) / limit * 100
                cap = base.get((s, kind))
                # if the unthrottled run could not reach the limit, the error
                # measures the machine, not the limiter
                mark = ""
                if cap is not None and cap < limit:
                    mark = " †"
                    flagged = True
                row += [cell, f"{e:+.2f}%{mark}"]
            else:
                row += [cell, "—"]
            entry[s] = {"achieved": v, "error_pct": e}
        rows.append(row)
        table.append(entry)
    lines.append(md_table(header, rows))
    if flagged:
        lines.append("\n† limit is above what this server reached unthrottled on this machine: "
                     "the error reflects capacity, not limiter accuracy.")
    lines.append("")
    doc = {"meta": meta, "iops_workload": a.iops_workload, "bw_workload": a.bw_workload,
           "table": table, "results": recs}
    with open(a.out, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    print("\n".join(lines))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    m = sub.add_parser("meta")
    for k in ("fio", "kernel", "nproc", "cpu", "nbdkit", "qsd", "qoslab", "qoslab-path", "git",
              "pin", "runtime", "ramp", "loadavg-start", "loadavg-end"):
        m.add_argument("--" + k, required=True)
    m.set_defaults(fn=cmd_meta)

    for name, fn in (("summarize", cmd_summarize), ("failed", cmd_failed)):
        s = sub.add_parser(name)
        if name == "summarize":
            s.add_argument("fio_json")
            s.add_argument("--server-cpu-s")
            s.add_argument("--ramp")
        else:
            s.add_argument("--reason", required=True)
            s.add_argument("--skipped", action="store_true",
                           help="not attempted (e.g. binary missing) rather than failed")
        s.add_argument("--server", required=True)
        s.add_argument("--job", required=True)
        s.add_argument("--limit-kind", choices=["iops", "bw"])
        s.add_argument("--limit")
        s.add_argument("--round")
        s.set_defaults(fn=fn)

    r = sub.add_parser("peers-report")
    r.add_argument("--results", required=True)
    r.add_argument("--meta", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--size-mib", required=True)
    r.add_argument("--note", dest="notes", action="append")
    r.set_defaults(fn=cmd_peers_report)

    r = sub.add_parser("accuracy-report")
    r.add_argument("--results", required=True)
    r.add_argument("--meta", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--iops-workload", required=True)
    r.add_argument("--bw-workload", required=True)
    r.set_defaults(fn=cmd_accuracy_report)

    a = p.parse_args()
    a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
