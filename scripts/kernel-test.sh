#!/usr/bin/env bash
# kernel-test.sh - runs the Go tests that need the gpu_ext kernel modules in
# a real kernel: the pinned Debian 6.12 cloud kernel (scripts/kernel-env.sh)
# booted under qemu (TCG: this machine's kernel has no module loading and
# KVM guests die), with a busybox initramfs that carries build/kmod/*.ko and
# static test binaries (CGO_ENABLED=0 go test -c). Inside, /init mounts
# proc, sys, dev, tmp and bpffs, insmods gpu_ext then gpu_ext_sim, runs each
# binary in its package directory, and prints EXIT=<worst status>; this
# script prints the serial log and exits with that status (1 when there is
# no EXIT line: timeout, panic, or a module that did not load).
#
# Usage: scripts/kernel-test.sh [--bench]
#   KERNEL_TEST_RUN=regexp     -test.run for every binary (default: all)
#   KERNEL_TEST_PKGS="a b"     packages to test (default: those below that exist)
#   KERNEL_TEST_TIMEOUT=s      qemu wall-clock limit (default 900)
#   KERNEL_TEST_NO_BUILD=1     use build/kmod/*.ko as they are (no make)
#   KERNEL_TEST_CPU=model      qemu -cpu (default qemu64,-cx16: see below)
#   --bench                    run the benchmark tests instead (GPUEXT_BENCH=1,
#                              -test.run '^TestKernelBench'); they print tables
# The tests see GPUEXT_KERNEL_TEST=1 and fail (rather than skip) when the
# modules are missing.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BENCH=0
[ "${1:-}" = "--bench" ] && BENCH=1

DEFAULT_PKGS="internal/gpuextsim internal/gpuext bpf/policy bpf/misbehave cmd/gpuextctl processor/gpupolicyprocessor"
PKGS=${KERNEL_TEST_PKGS:-}
if [ -z "$PKGS" ]; then
	for p in $DEFAULT_PKGS; do
		ls "$p"/*_test.go >/dev/null 2>&1 && PKGS="$PKGS $p"
	done
fi
RUN=${KERNEL_TEST_RUN:-.}
if [ $BENCH = 1 ]; then
	RUN=${KERNEL_TEST_RUN:-^TestKernelBench}
fi
TIMEOUT=${KERNEL_TEST_TIMEOUT:-900}
# qemu 7.2's TCG now and then corrupts state around SLUB's cmpxchg16b
# (double faults in kmem_cache_alloc/slab_sysfs_init, garbage EFLAGS, seen
# at boot and in tests alike); a CPU without cx16 makes SLUB take its
# locked path, which TCG emulates correctly.
CPU=${KERNEL_TEST_CPU:-qemu64,-cx16}

eval "$(scripts/kernel-env.sh)"
[ -n "${KERNEL_TEST_NO_BUILD:-}" ] || make -s -C kernel-modules >/dev/null

# One directory per run: runs may overlap (several engineers, one tree).
mkdir -p "$ROOT/build/ktest"
VM=$(mktemp -d "$ROOT/build/ktest/run.XXXXXX")
R=$VM/root
trap 'rm -rf "$R" "$VM/initrd.cpio"' EXIT
mkdir -p "$R"/{bin,proc,sys,tmp,dev,kmod,work}
cp "$(command -v busybox || echo /bin/busybox)" "$R/bin/busybox"
cp build/kmod/gpu_ext.ko "$R/kmod/"
[ -f build/kmod/gpu_ext_sim.ko ] && cp build/kmod/gpu_ext_sim.ko "$R/kmod/"

# One static binary per package, run from a copy of its directory so that
# testdata/ resolves as it does on the host.
for p in $PKGS; do
	mkdir -p "$R/work/$p"
	echo "kernel-test: building $p" >&2
	CGO_ENABLED=0 go test -c -o "$R/work/$p/pkg.test" "./$p"
	[ -d "$p/testdata" ] && cp -r "$p/testdata" "$R/work/$p/"
	[ -f "$p/metadata.yaml" ] && cp "$p/metadata.yaml" "$R/work/$p/" # mdatagen's generated tests read it
done

cat > "$R/init" <<EOF
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp; mount -t bpf bpf /sys/fs/bpf
export GPUEXT_KERNEL_TEST=1 GPUEXT_BENCH=$BENCH HOME=/tmp TMPDIR=/tmp
echo KTEST-START
echo "kernel-test: \$(uname -r), cpu flags with cx16: \$(grep -c -w cx16 /proc/cpuinfo)"
worst=0
for m in gpu_ext gpu_ext_sim; do
	[ -f /kmod/\$m.ko ] || continue
	if ! insmod /kmod/\$m.ko; then echo "kernel-test: insmod \$m failed"; worst=1; fi
done
for p in $PKGS; do
	echo "=== PACKAGE \$p"
	cd /work/\$p
	./pkg.test -test.v -test.count=1 -test.timeout=10m -test.run '$RUN' 2>&1
	rc=\$?
	echo "=== PACKAGE \$p rc=\$rc"
	[ \$rc -ne 0 ] && worst=\$rc
done
dmesg | grep -iE 'gpu_ext|BUG|WARNING|Oops|panic' | grep -v 'taints kernel\|signature and/or' || true
echo "EXIT=\$worst"
poweroff -f
EOF
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet >"$VM/initrd.cpio")

echo "kernel-test: booting $KIMAGE ($(du -h "$VM/initrd.cpio" | cut -f1) initramfs)" >&2
start=$(date +%s)
timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg -cpu "$CPU" -m 2048 -smp 1 -kernel "$KIMAGE" \
	-initrd "$VM/initrd.cpio" -append "console=ttyS0 rdinit=/init panic=-1 quiet" \
	-nographic -no-reboot >"$VM/serial.log" 2>&1 || true
tr -d '\r' <"$VM/serial.log" | sed -n '/KTEST-START/,$p' | sed '1d'
rc=$(tr -d '\r' <"$VM/serial.log" | sed -n 's/^EXIT=\([0-9]*\)$/\1/p' | tail -1)
echo "kernel-test: $(($(date +%s) - start)) s in qemu" >&2
if [ -z "$rc" ]; then
	echo "kernel-test: no EXIT line (timeout after ${TIMEOUT}s or a crash); full log: $VM/serial.log" >&2
	exit 1
fi
exit "$rc"
