#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# check.sh OUT FAKECUDA - devrt against the fake driver, from the shell.
#
# For every workload scenario: the program prints the same JSON with and
# without devrt (except pid, wall time, thread ids and the driver's own
# counters, which include devrt's event calls), exits 0 both times, and
# devrt leaves one closed ring per process with records and no drops.
# The exact record-by-record checks are Go tests (devrt/devrttest).
set -eu

out=$1
fc=$2
lib=$out/libgpuext-devrt.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

LD_PRELOAD=$lib "$out/dlsym-test"

# What may differ between two runs of a scenario.
strip() {
	sed -E 's/"(pid|wall_ms)":[0-9.]+,?//g; s/"tids":\[[0-9,]*\],?//g;
		s/,"driver_calls":\{[^}]*\}//g'
}

for s in launch-storm alloc-leak copies errors threads fork-child fork-noexec \
	runtime runtime-ex runtime-stub runtime-unlaunched runtime-many runtime-errors procaddr procaddr-table every-api timed all; do
	plain=$(LD_LIBRARY_PATH=$fc "$fc/workload" $s | strip)
	mkdir "$tmp/$s"
	# Time every launch and copy (no minimum interval between two), with
	# events enough for all of them.
	traced=$(GPUEXT_DEVRT_DIR=$tmp/$s GPUEXT_DEVRT_SAMPLE=1 \
		GPUEXT_DEVRT_SAMPLE_GAP_US=0 GPUEXT_DEVRT_EVENT_PAIRS=4096 \
		LD_PRELOAD=$lib LD_LIBRARY_PATH=$fc "$fc/workload" $s | strip)
	if [ "$plain" != "$traced" ]; then
		echo "check: $s: output differs under devrt:" >&2
		echo "  without: $plain" >&2
		echo "  with:    $traced" >&2
		fail=1
		continue
	fi
	# fork-*: two processes; procaddr-table reports no call at all.
	want=1
	case $s in fork-*) want=2 ;; esac
	[ $s = procaddr-table ] && want=0
	n=$(ls "$tmp/$s" | grep -c '\.ring$' || true)
	if [ "$n" != "$want" ]; then
		echo "check: $s: $n ring files, want $want" >&2
		fail=1
		continue
	fi
	for ring in $(ls "$tmp/$s"/*.ring 2>/dev/null); do
		hdr=$("$out/ringdump" "$ring" | grep '"kind":"header"')
		case $hdr in
		*'"state":3,'*'"drops":[0,0,0,0,0,0,0,0]'*) ;;
		*) echo "check: $s: $hdr" >&2; fail=1 ;;
		esac
		case $hdr in
		*'"records":0,'*) echo "check: $s: no records" >&2; fail=1 ;;
		esac
	done
	echo "ok: $s: same output under devrt, $n ring(s)"
done
[ $fail = 0 ] || exit 1
echo "check: all good"
