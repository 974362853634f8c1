#!/usr/bin/env bash
# Which launch APIs PyTorch's kernels arrive through, and whether they are
# named: a short PyTorch loop under the collector, spans by API and how many
# carry gpu.cuda.kernel.name. MODE=uprobes (default): the collector's
# uprobes; MODE=devrt: the program under LD_PRELOAD=libgpuext-devrt.so, the
# collector reading its ring with its uprobes off; MODE=both: devrt and the
# uprobes (include rule: executable python*), whose spans must be devrt's
# once each: the same counts as MODE=devrt, under the program's name.
# MODES="devrt both" runs several in turn.
# Needs .device/otelcol-gpu.xz (and .device/devrt/ for devrt and both).
source "$(dirname "$0")/lib.sh"
for MODE in ${MODES:-${MODE:-uprobes}}; do
echo "== MODE=$MODE"
rm -f $OUT/otel*.jsonl
pre=""
case "$MODE" in
devrt | both)
	pre=$PWD/.device/devrt/libgpuext-devrt.so
	CUDA_ENABLED=$([ "$MODE" = both ] && echo true || echo false) DEVRT_SAMPLE=32 RUN_NAME=$MODE \
		$bin --config bench/device/devrt_overhead.yaml > $OUT/collector.log 2>&1 &
	;;
*)
	$bin --config bench/device/collector.yaml > $OUT/collector.log 2>&1 &
	;;
esac
col=$!
wait_ready "$OUT/collector.log"
LD_PRELOAD=$pre python3 -c "
import torch
x = torch.zeros(1 << 20, device='cuda')
for _ in range(200): x.add_(1); x.mul_(0.5)
y = torch.randn(512, 512, device='cuda'); z = y @ y
torch.cuda.synchronize()"
sleep 2
kill -TERM $col; wait $col
python3 - $OUT/otel*.jsonl <<'PY'
import json, sys, collections
n, named = collections.Counter(), collections.Counter()
exe = collections.Counter()
for line in open(sys.argv[1]):
    d = json.loads(line)
    for rs in d.get("resourceSpans", []):
        res = {a["key"]: a["value"].get("stringValue") for a in rs.get("resource", {}).get("attributes", [])}
        for ss in rs["scopeSpans"]:
            for s in ss["spans"]:
                n[s["name"]] += 1
                if any(a["key"] == "gpu.cuda.kernel.name" for a in s.get("attributes", [])):
                    named[s["name"]] += 1
                exe[res.get("process.executable.name") or "?"] += 1
for k, v in n.most_common(12):
    print(f"{k:28} {v:6} spans, {named[k]:6} with a kernel name")
print("spans by process.executable.name:", dict(exe))
PY
gzip -f $OUT/otel*.jsonl
done
