#!/usr/bin/env bash
# Captures the kernel and nvidia_uvm BTF and the nvidia_uvm symbol names of
# the GPU machine into $OUT, for bpf/testdata (see bpf/testdata/README.md).
set -euo pipefail
: "${OUT:?set OUT to a directory}"
mkdir -p "$OUT"
gzip -9 -c /sys/kernel/btf/vmlinux > "$OUT/vmlinux-$(uname -r).btf.gz"
cp /sys/kernel/btf/nvidia_uvm "$OUT/nvidia_uvm-$(cat /sys/module/nvidia_uvm/version 2>/dev/null || echo unknown).btf"
grep -w '\[nvidia_uvm\]' /proc/kallsyms | awk '{print $2, $3}' | sort -k2 | gzip -9 > "$OUT/nvidia_uvm.kallsyms.gz"
sha256sum /sys/kernel/btf/nvidia_uvm
