# Sourced by the device-probe checks (probes_check.sh, multigpu_check.sh,
# probes_torch.sh).
#
# probes_setup NAME: what a check starts with, in the repository root:
# OUT (made), D (the binaries built for the GPU, .device/probes unless
# set: missing ones end the check), PY, DIR (devrt's directory, /dev/shm/gx<NAME>-<pid>, made), W (a
# scratch directory), COL (the collector's pid: killed at exit, and both
# directories removed).
probes_setup() {
	ROOT=$(pwd)
	OUT=${OUT:-/tmp/out}
	mkdir -p "$OUT"
	D=${D:-$ROOT/.device/probes}
	PY=/opt/torch/.venv/bin/python; [ -x $PY ] || PY=python3
	DIR=/dev/shm/gx$1-$$
	W=$(mktemp -d)
	COL=
	trap probes_cleanup EXIT
	for f in "$D/otelcol-gpu" "$D/devrt/libgpuext-devrt.so"; do
		[ -e "$f" ] || { echo "missing $f: build first (see the top of $0)"; exit 1; }
	done
	mkdir -p "$DIR"
}

probes_cleanup() {
	[ -n "$COL" ] && kill "$COL" 2>/dev/null && wait "$COL" 2>/dev/null
	rm -rf "$DIR" "$W"
}
#
# probes_collector_config DIR PROBES MODE SAMPLE FILE: a collector
# config with devrt alone (its rings and injection socket in DIR), the
# device probes PROBES ("a, b") at MODE (warp, thread) in the blocks SAMPLE
# says (n: block_sample n, every block for 1; lK: blocks_per_launch K, the
# collector's default l256), 1 launch in 4 timed (launch latency's clock
# offset), spans and metrics to FILE; the collector logs at LOG_LEVEL
# (default info; debug: each launch latency). One file exporter serves both
# pipelines: safe with no processor between (bench/device/collector.yaml
# says why).
probes_collector_config() {
	local bs=$4 bpl=0
	case $4 in l*) bs=1 bpl=${4#l} ;; esac
	cat <<YAML
receivers:
  gpuebpf:
    collection_interval: 500ms
    spans:
      flush_interval: 200ms
    cuda:
      enabled: false
    nvml:
      enabled: false
    uvm:
      enabled: false
    devrt:
      directories: [$1]
      poll_interval: 20ms
      sample_every: 4
      sample_min_interval: 0s
      probes:
        enabled: true
        probes: [$2]
        mode: $3
        block_sample: $bs
        blocks_per_launch: $bpl
exporters:
  file:
    path: $5
    flush_interval: 200ms
service:
  telemetry:
    logs:
      level: ${LOG_LEVEL:-info}
      sampling:
        enabled: false
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [gpuebpf]
      exporters: [file]
    metrics:
      receivers: [gpuebpf]
      exporters: [file]
YAML
}
