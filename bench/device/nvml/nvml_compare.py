#!/usr/bin/env python3
"""Compare the collector's NVML metrics with nvidia-smi over the same run.

Inputs (Python standard library only):

  collector   file exporter output: JSON lines, one OTLP export request per
              line (lines without "resourceMetrics" are skipped).
  smi         CSV from
                nvidia-smi --query-gpu=uuid,utilization.gpu,utilization.memory,memory.used,memory.total,power.draw,temperature.gpu,clocks.sm,clocks.mem \\
                           --format=csv,noheader,nounits -lms 500
              optionally with timestamps, which makes the alignment exact:
                - "timestamp" as the first query field (nvidia-smi's local
                  "YYYY/MM/DD HH:MM:SS.mmm"), or
                - an epoch-seconds first column added by a wrapper
                  (capture.sh does this).
              Without timestamps the rows are placed --smi-interval apart,
              the last one at --smi-end (default: the file's mtime).
  apps        (optional) nvidia-smi --query-compute-apps=pid,used_memory
              --format=csv,noheader,nounits (a gpu_uuid column may be added).

For each GPU and metric, every collector point is paired with the nvidia-smi
row of the same GPU nearest in time (at most --max-skew apart); the table
shows the means, the mean and largest difference, and a verdict against a
per-metric tolerance. Utilisation is sampled over different windows by the
two tools, so its tolerance is wide. --pairs prints every pair.

Exit status: 0; with --strict, 1 when a metric is off or a workload pid is
not attributed.
"""

import argparse
import bisect
import csv
import datetime
import json
import os
import sys
from collections import defaultdict

MIB = 1 << 20

# nvidia-smi column -> (collector metric, point attributes, scale to the
# nvidia-smi unit, tolerance (absolute, relative), label)
COLUMNS = [
    ("utilization.gpu", "hw.gpu.utilization", {"hw.gpu.task": "general"}, 100.0, (10.0, 0.0), "%"),
    ("utilization.memory", "gpu.memory.controller.utilization", {}, 100.0, (10.0, 0.0), "%"),
    ("memory.used", "hw.gpu.memory.usage", {}, 1.0 / MIB, (2.0, 0.0), "MiB"),
    ("memory.total", "hw.gpu.memory.limit", {}, 1.0 / MIB, (1.0, 0.0), "MiB"),
    ("power.draw", "hw.power", {}, 1.0, (5.0, 0.05), "W"),
    ("temperature.gpu", "hw.temperature", {"hw.sensor_location": "gpu"}, 1.0, (1.0, 0.0), "C"),
    ("clocks.sm", "gpu.clock.frequency", {"gpu.clock.type": "sm"}, 1e-6, (15.0, 0.0), "MHz"),
    ("clocks.mem", "gpu.clock.frequency", {"gpu.clock.type": "memory"}, 1e-6, (15.0, 0.0), "MHz"),
]
SMI_FIELDS = [c[0] for c in COLUMNS]


def attr_value(v):
    for k in ("stringValue", "intValue", "doubleValue", "boolValue"):
        if k in v:
            return v[k]
    return None


def attrs(lst):
    return {a["key"]: attr_value(a.get("value", {})) for a in lst or []}


def point_value(dp):
    if "asDouble" in dp:
        return float(dp["asDouble"])
    if "asInt" in dp:
        return float(int(dp["asInt"]))
    return None


def load_collector(path):
    """Returns (series, processes).

    series: {(hw.id, metric, frozenset(point attrs)): [(t, value)]} for GPU
    resources (no process.pid); processes: [{resource attrs, metric, t, value}]
    for per-process points.
    """
    series = defaultdict(list)
    processes = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                doc = json.loads(line)
            except json.JSONDecodeError as e:
                print(f"{path}:{lineno}: skipped, not JSON ({e})", file=sys.stderr)
                continue
            for rm in doc.get("resourceMetrics", []):
                res = attrs(rm.get("resource", {}).get("attributes"))
                hwid = res.get("hw.id")
                for sm in rm.get("scopeMetrics", []):
                    for m in sm.get("metrics", []):
                        body = m.get("gauge") or m.get("sum") or {}
                        for dp in body.get("dataPoints", []):
                            v = point_value(dp)
                            if v is None:
                                continue
                            t = int(dp.get("timeUnixNano", "0")) / 1e9
                            pa = attrs(dp.get("attributes"))
                            if "process.pid" in res:
                                # NVML's per-process points are on a GPU; the
                                # CUDA source's per-process metrics are not.
                                if hwid:
                                    processes.append({"res": res, "metric": m["name"], "attrs": pa, "t": t, "v": v})
                            elif hwid:
                                series[(hwid, m["name"], frozenset(pa.items()))].append((t, v))
    for pts in series.values():
        pts.sort()
    return series, processes


def parse_time(field):
    field = field.strip()
    try:
        return float(field)  # epoch seconds from a wrapper
    except ValueError:
        pass
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.datetime.strptime(field, fmt).timestamp()  # nvidia-smi: local time
        except ValueError:
            pass
    return None


def num(s):
    s = s.strip()
    if s in ("", "[N/A]", "N/A", "[Not Supported]", "[Unknown Error]"):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def load_smi(path, interval, end):
    """Returns {uuid: [(t, {column: value})]}."""
    rows = []
    with open(path, encoding="utf-8", newline="") as f:
        for rec in csv.reader(f):
            rec = [c.strip() for c in rec]
            if not rec or rec == [""]:
                continue
            t = None
            if len(rec) == len(SMI_FIELDS) + 2:  # timestamp, uuid, ...
                t = parse_time(rec[0])
                rec = rec[1:]
            if len(rec) != len(SMI_FIELDS) + 1 or not rec[0].startswith("GPU-"):
                continue  # header or noise
            rows.append([t, rec[0], {c: num(v) for c, v in zip(SMI_FIELDS, rec[1:])}])
    if rows and rows[0][0] is None:
        # No timestamps: one sample per GPU per interval, the last at `end`.
        if end is None:
            end = os.path.getmtime(path)
            print(f"note: {path} has no timestamps; placing rows {interval}s apart, "
                  f"the last at the file's mtime", file=sys.stderr)
        per_round = len({r[1] for r in rows})
        rounds = (len(rows) + per_round - 1) // per_round
        for i, r in enumerate(rows):
            r[0] = end - (rounds - 1 - i // per_round) * interval
    out = defaultdict(list)
    for t, uuid, vals in rows:
        if t is not None:
            out[uuid].append((t, vals))
    for v in out.values():
        v.sort(key=lambda x: x[0])
    return out


def nearest(rows, times, t):
    i = bisect.bisect_left(times, t)
    best = None
    for j in (i - 1, i):
        if 0 <= j < len(rows):
            if best is None or abs(rows[j][0] - t) < abs(rows[best][0] - t):
                best = j
    return rows[best] if best is not None else None


def load_apps(path):
    """Returns [(uuid or None, pid, used MiB)]."""
    apps = []
    with open(path, encoding="utf-8", newline="") as f:
        for rec in csv.reader(f):
            rec = [c.strip() for c in rec]
            uuid = next((c for c in rec if c.startswith("GPU-") or c.startswith("MIG-")), None)
            rest = [c for c in rec if c != uuid]
            if len(rest) < 2:
                continue
            try:
                apps.append((uuid, int(rest[0]), num(rest[1])))
            except ValueError:
                continue  # header
    return apps


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return f"{v:.0f}"
    return f"{v:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("collector", help="file exporter JSON lines")
    ap.add_argument("smi", help="nvidia-smi --query-gpu CSV")
    ap.add_argument("apps", nargs="?", help="nvidia-smi --query-compute-apps=pid,used_memory CSV")
    ap.add_argument("--pid", type=int, action="append", default=[],
                    help="workload pid that must appear in the per-process metrics (repeatable); "
                         "default: every pid in the apps file")
    ap.add_argument("--max-skew", type=float, default=1.0, help="largest time gap of a pair, seconds (1.0)")
    ap.add_argument("--smi-interval", type=float, default=0.5, help="-lms period of an untimestamped CSV, s (0.5)")
    ap.add_argument("--smi-end", type=float, help="epoch time of the last untimestamped row (default: mtime)")
    ap.add_argument("--pairs", action="store_true", help="print every pair")
    ap.add_argument("--strict", action="store_true", help="exit 1 on any 'off' verdict or unattributed pid")
    args = ap.parse_args()

    series, processes = load_collector(args.collector)
    smi = load_smi(args.smi, args.smi_interval, args.smi_end)
    if not series:
        sys.exit(f"{args.collector}: no GPU metrics found")
    if not smi:
        sys.exit(f"{args.smi}: no nvidia-smi rows found")

    bad = 0
    header = f"{'gpu':<14} {'metric (nvidia-smi column)':<64} {'n':>4} {'collector':>11} {'nvidia-smi':>11} {'mean Δ':>9} {'max |Δ|':>9} {'max Δt':>7}  verdict"
    print(header)
    print("-" * len(header))
    gpus = sorted({k[0] for k in series if k[0].startswith("GPU-")})
    for uuid in gpus:
        rows = smi.get(uuid)
        if not rows:
            print(f"{uuid[:13]:<14} not in the nvidia-smi CSV")
            bad += 1
            continue
        times = [r[0] for r in rows]
        for col, metric, pattrs, scale, (tol_abs, tol_rel), unit in COLUMNS:
            pts = series.get((uuid, metric, frozenset(pattrs.items())), [])
            pairs = []
            for t, v in pts:
                r = nearest(rows, times, t)
                if r is None or abs(r[0] - t) > args.max_skew or r[1].get(col) is None:
                    continue
                pairs.append((t, v * scale, r[1][col], r[0] - t))
            label = f"{metric}{'{' + ','.join(f'{k}={v}' for k, v in pattrs.items()) + '}' if pattrs else ''} ({col}, {unit})"
            if not pairs:
                state = "collector has no points" if not pts else "no pair within --max-skew"
                print(f"{uuid[:13]:<14} {label:<64} {0:>4} {'-':>11} {'-':>11} {'-':>9} {'-':>9} {'-':>7}  {state}")
                continue
            n = len(pairs)
            mc = sum(p[1] for p in pairs) / n
            ms = sum(p[2] for p in pairs) / n
            diffs = [p[1] - p[2] for p in pairs]
            md = sum(diffs) / n
            mx = max(abs(d) for d in diffs)
            skew = max(abs(p[3]) for p in pairs)
            tol = max(tol_abs, tol_rel * abs(ms))
            verdict = "ok" if abs(md) <= tol else f"off (tolerance {fmt(tol)})"
            if not verdict.startswith("ok"):
                bad += 1
            print(f"{uuid[:13]:<14} {label:<64} {n:>4} {fmt(mc):>11} {fmt(ms):>11} {fmt(md):>9} {fmt(mx):>9} {skew:>6.2f}s  {verdict}")
            if args.pairs:
                for t, c, s, dt in pairs:
                    ts = datetime.datetime.fromtimestamp(t).strftime("%H:%M:%S.%f")[:-3]
                    print(f"{'':<14}   {ts}  collector {fmt(c):>11}  nvidia-smi {fmt(s):>11}  Δ {fmt(c - s):>9}  Δt {dt:+.2f}s")

    # Per-process attribution.
    print()
    by_pid = defaultdict(list)
    for p in processes:
        by_pid[int(p["res"]["process.pid"])].append(p)
    apps = load_apps(args.apps) if args.apps else []
    want = list(dict.fromkeys(args.pid or [pid for _, pid, _ in apps]))
    if not want and not by_pid:
        print("no per-process metrics and no workload pid given")
    if by_pid:
        print(f"{'pid':>8} {'hw.id':<14} {'executable':<16} {'container.id':<14} {'k8s.pod.uid':<38} {'memory MiB':>10} {'nvidia-smi MiB':>14} {'max sm util':>11}")
        for pid in sorted(by_pid):
            pts = by_pid[pid]
            res = pts[-1]["res"]
            mem = [p for p in pts if p["metric"] == "gpu.process.memory.usage"]
            sm = [p for p in pts if p["metric"] == "gpu.process.utilization" and p["attrs"].get("gpu.engine") == "sm"]
            mem_v = max((p["v"] for p in mem), default=None)
            smi_mem = [m for _, apid, m in apps if apid == pid and m is not None]
            print(f"{pid:>8} {str(res.get('hw.id', '-'))[:13]:<14} {str(res.get('process.executable.name', '-'))[:16]:<16} "
                  f"{str(res.get('container.id', '-'))[:12]:<14} {str(res.get('k8s.pod.uid', '-')):<38} "
                  f"{fmt(mem_v / MIB if mem_v is not None else None):>10} {fmt(max(smi_mem) if smi_mem else None):>14} "
                  f"{fmt(max((p['v'] for p in sm), default=None)):>11}")
    for pid in want:
        if pid in by_pid:
            print(f"workload pid {pid}: attributed (on {by_pid[pid][-1]['res'].get('hw.id')})")
        else:
            print(f"workload pid {pid}: NOT in the collector's per-process metrics")
            bad += 1
    if args.strict and bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
