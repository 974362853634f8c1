#!/usr/bin/env bash
# Installs what building and testing otelcol-gpu needs on Debian 12, and
# nothing when it is already there: clang-19 and llvm-19 (BPF objects), bpftool,
# libbpf headers, gcc/make/libc6-dev (fake CUDA driver, devrt), and linux-perf
# for benchmarks.
set -euo pipefail
need=()
command -v clang-19 >/dev/null || need+=(clang-19 llvm-19)
command -v bpftool >/dev/null || [ -x /usr/sbin/bpftool ] || need+=(bpftool)
[ -f /usr/include/bpf/bpf_helpers.h ] || need+=(libbpf-dev)
[ -f /usr/include/x86_64-linux-gnu/asm/types.h ] || need+=(linux-libc-dev)
command -v gcc >/dev/null || need+=(gcc)
# C headers and the static libc (devrt's ringdump is linked -static).
[ -f /usr/lib/x86_64-linux-gnu/libc.a ] || need+=(libc6-dev)
command -v make >/dev/null || need+=(make)
# devrt's inject test checks its LZ4 decoder, and the Zstandard one it
# dlopens, against the reference libraries' compressors.
[ -f /usr/lib/x86_64-linux-gnu/liblz4.so.1 ] || need+=(liblz4-1)
[ -f /usr/lib/x86_64-linux-gnu/libzstd.so.1 ] || need+=(libzstd1)
# The container tests of the devrt ring and device probe sources run their
# stand-in processes under unshare; the probes' one maps a region with python3.
command -v unshare >/dev/null || need+=(util-linux)
command -v python3 >/dev/null || need+=(python3-minimal)
# --- kernel modules and their qemu tests (kernel-modules/, make kernel-test) ---
# pahole (dwarves) writes a module's .BTF, without which its struct_ops and
# kfuncs cannot register; dpkg-deb unpacks the pinned kernel
# (scripts/kernel-env.sh downloads it from bookworm-backports); qemu,
# busybox-static and cpio boot it with an initramfs.
command -v pahole >/dev/null || need+=(dwarves)
command -v dpkg-deb >/dev/null || need+=(dpkg)
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
[ -f /usr/share/doc/busybox-static/copyright ] || need+=(busybox-static)
command -v cpio >/dev/null || need+=(cpio)
# --- end of the kernel block ---

if [ ${#need[@]} -gt 0 ]; then
	echo "installing: ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

