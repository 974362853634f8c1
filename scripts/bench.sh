#!/usr/bin/env bash
# make bench: the benchmarks that back the README's figures, side by side in
# one run. Needs root (real BPF programs and uprobes) and the fake driver
# (FAKECUDA, set by the Makefile).
#
#  1. probe overhead: cuLaunchKernel on the fake driver, unprobed vs probed
#  2. receiver per-event cost: decode + translate on one core, spans on/off
#  3. ring to pdata: paced 100,000 calls/s (zero loss required) and a flood
#  4. devrt: cuLaunchKernel on the fake driver without and with the
#     in-process runtime (DEVRT: its build, set by the Makefile)
set -euo pipefail
cd "$(dirname "$0")/.."
out=build/bench
mkdir -p "$out"
: "${FAKECUDA:=$PWD/build/fakecuda}"
: "${DEVRT:=$PWD/build/devrt}"
export FAKECUDA DEVRT

echo "== probe overhead (ns per cuLaunchKernel on the fake driver)"
go test -run XXX -bench ProbeOverhead -benchtime 500000x -count 3 \
	./receiver/gpuebpfreceiver/internal/cudaprobe/ | tee "$out/probe.txt"

echo "== decode + translate, one core"
go test -run XXX -bench 'Decode' -benchtime 2s -cpu 1 -count 3 \
	./receiver/gpuebpfreceiver/internal/translate/ | tee "$out/translate.txt"

echo "== ring buffer to pdata, whole receiver"
go test -run XXX -bench ReceiverRing -benchtime 300000x -count 3 \
	./receiver/gpuebpfreceiver/ | tee "$out/ring.txt"

echo "== NVML source, collector-side cost per scrape (mock NVML)"
go test -run XXX -bench 'BenchmarkScrape$' -benchmem -count 3 \
	./receiver/gpuebpfreceiver/internal/nvml/ | tee "$out/nvml.txt"

echo "== device probes: the collector's cost of one poll of one region (132 SMs, every occupancy slot marked)"
go test -run XXX -bench RegionRead -benchtime 200x -count 3 \
	./internal/proberegion/ | tee "$out/region.txt"

echo "== device probes: the collector's launch_latency pairing, ns per launch (a launch every 2 µs, 1 in 64 timed)"
go test -run XXX -bench LaunchMatcher -benchtime 500000x -count 3 -benchmem \
	./internal/proberegion/ | tee "$out/matcher.txt"

echo "== devrt: ns per cuLaunchKernel on the fake driver, in-process"
go test -run XXX -bench DevrtOverhead -benchtime 1000000x -count 3 \
	./devrt/devrttest/ | tee "$out/devrt.txt"

# Summary: medians of the three runs, and the ratios.
python3 - "$out" <<'PY'
import re, statistics, sys
out = sys.argv[1]
def metric(path, bench, unit):
    vals = []
    for line in open(path):
        if re.match(re.escape(bench) + r"(-\d+)?\s", line):
            m = re.search(r"([\d.]+) " + re.escape(unit) + r"\b", line)
            if m:
                vals.append(float(m.group(1)))
    return statistics.median(vals) if vals else float("nan")
un = metric(f"{out}/probe.txt", "BenchmarkProbeOverhead/unprobed", "ns/call")
pr = metric(f"{out}/probe.txt", "BenchmarkProbeOverhead/probed", "ns/call")
pe = metric(f"{out}/probe.txt", "BenchmarkProbeOverhead/probed-launch-entry-only", "ns/call")
sp = metric(f"{out}/translate.txt", "BenchmarkDecodeTranslateSpans", "events/s")
mo = metric(f"{out}/translate.txt", "BenchmarkDecodeTranslateMetricsOnly", "events/s")
pa = metric(f"{out}/ring.txt", "BenchmarkReceiverRing/paced-100k", "calls/s")
pd = metric(f"{out}/ring.txt", "BenchmarkReceiverRing/paced-100k", "dropped")
fl = metric(f"{out}/ring.txt", "BenchmarkReceiverRing/flood", "calls/s")
fd = metric(f"{out}/ring.txt", "BenchmarkReceiverRing/flood", "dropped")
n1 = metric(f"{out}/nvml.txt", "BenchmarkScrape/gpus=1", "µs/gpu")
n8 = metric(f"{out}/nvml.txt", "BenchmarkScrape/gpus=8", "µs/gpu")
dv = {k: metric(f"{out}/devrt.txt", "BenchmarkDevrtOverhead/" + k, "ns/call")
      for k in ("without-devrt", "devrt-classes-none", "devrt-timing-off", "devrt-sample-32", "devrt-ring-full",
                "without-devrt-cold", "devrt-timing-off-cold",
                "without-devrt-runtime", "devrt-timing-off-runtime")}
print()
print("| benchmark | result |")
print("| --- | --- |")
print(f"| cuLaunchKernel, fake driver, unprobed | {un:.1f} ns/call |")
print(f"| cuLaunchKernel, fake driver, entry+return probes | {pr:.0f} ns/call (+{pr-un:.0f} ns) |")
print(f"| cuLaunchKernel, fake driver, entry probe only (launch_return_probes: false) | {pe:.0f} ns/call (+{pe-un:.0f} ns, {(pr-un)/(pe-un):.1f}x less than entry+return) |")
print(f"| decode + translate, spans and metrics, 1 core | {sp/1e6:.2f} M events/s ({sp/1e6:.2f}x the 1 M/s target) |")
print(f"| decode + translate, metrics only, 1 core | {mo/1e6:.1f} M events/s |")
print(f"| ring to pdata, paced 100k calls/s | {pa:.0f} calls/s, {pd:.0f} dropped |")
print(f"| ring to pdata, flood from one thread | {fl:.0f} calls/s, {fd:.0f} dropped |")
print(f"| NVML scrape, collector's own work (mock), 1 GPU / 8 GPUs | {n1:.1f} / {n8:.1f} µs per GPU |")
d0 = dv["without-devrt"]
print(f"| cuLaunchKernel, fake driver, without devrt | {d0:.1f} ns/call |")
for k, what in (("devrt-classes-none", "devrt, every class off (pass-through)"),
                ("devrt-timing-off", "devrt, calls reported, timing off"),
                ("devrt-sample-32", "devrt, calls reported, 1 in 32 timed, no minimum interval"),
                ("devrt-ring-full", "devrt, ring full (records dropped and counted)")):
    print(f"| cuLaunchKernel, fake driver, {what} | {dv[k]:.0f} ns/call (+{dv[k]-d0:.0f} ns; uprobes entry+return: +{pr-un:.0f} ns) |")
r0, r1 = dv["without-devrt-runtime"], dv["devrt-timing-off-runtime"]
print(f"| cudaLaunchKernel through the fake runtime (PyTorch's path), without devrt / devrt timing off | {r0:.1f} / {r1:.0f} ns/call (+{r1-r0:.0f} ns) |")
c0, c1 = dv["without-devrt-cold"], dv["devrt-timing-off-cold"]
print(f"| cuLaunchKernel, fake driver, caches cold (8 MiB written between calls, each call timed), without devrt / devrt timing off | {c0:.0f} / {c1:.0f} ns/call (+{c1-c0:.0f} ns) |")
PY
