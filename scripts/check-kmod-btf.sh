#!/usr/bin/env bash
# check-kmod-btf.sh - checks what struct_ops and kfuncs in a module need
# before anyone boots a kernel: each .ko has a .BTF section (split BTF on
# the pinned kernel's vmlinux), gpu_ext.ko carries enum gpu_ext_abi with the
# ABI version of gpuext_abi.h and both struct_ops types, and every id of its
# kfunc BTF_ID set was filled by resolve_btfids (non-zero, naming a
# bpf_gpu_ext_* FUNC). A module built without pahole or resolve_btfids loads
# fine and then fails at the first policy attach; this fails the build.
#
# Usage: scripts/check-kmod-btf.sh build/kmod/gpu_ext.ko [other.ko ...]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KDIR=$("$ROOT/scripts/kernel-env.sh" --print | sed -n 's/^KDIR=//p')
VMLINUX=$KDIR/vmlinux
BPFTOOL=$(command -v bpftool || echo /usr/sbin/bpftool)
want_abi=$(sed -n 's/^#define GPUEXT_KMOD_ABI_VERSION \([0-9]*\).*/\1/p' "$ROOT/bpf/include/gpuext_abi.h")
fail() { echo "check-kmod-btf: $*" >&2; exit 1; }

for ko in "$@"; do
	[ -f "$ko" ] || fail "$ko: no such file"
	readelf -S "$ko" | grep -q ' \.BTF ' || fail "$ko: no .BTF section (pahole missing?)"
	dump=$("$BPFTOOL" -B "$VMLINUX" btf dump file "$ko") || fail "$ko: BTF does not load against $VMLINUX"
	echo "$ko: .BTF ok ($(echo "$dump" | grep -c '^\[') types)"
	[ "$(basename "$ko")" = gpu_ext.ko ] || continue

	abi=$(echo "$dump" | grep -A1 "ENUM 'gpu_ext_abi'" | sed -n "s/.*'GPU_EXT_ABI_VERSION' val=\([0-9]*\).*/\1/p")
	[ "$abi" = "$want_abi" ] || fail "$ko: enum gpu_ext_abi GPU_EXT_ABI_VERSION=${abi:-missing}, gpuext_abi.h says $want_abi"
	for t in gpu_mem_ops gpu_sched_ops bpf_struct_ops_gpu_mem_ops bpf_struct_ops_gpu_sched_ops; do
		echo "$dump" | grep -q "STRUCT '$t' " || fail "$ko: struct $t missing from BTF"
	done

	# .BTF_ids holds the kfunc set: struct btf_id_set8 { u32 cnt; u32 flags;
	# struct { u32 id; u32 flags; } pairs[cnt]; }.
	tmp=$(mktemp)
	objcopy -O binary --only-section=.BTF_ids "$ko" "$tmp"
	mapfile -t words < <(od -An -tu4 -v -w4 "$tmp" | tr -d ' ')
	rm -f "$tmp"
	cnt=${words[0]:-0}
	[ "$cnt" -gt 0 ] || fail "$ko: empty kfunc id set"
	for ((i = 0; i < cnt; i++)); do
		id=${words[$((2 + 2 * i))]}
		[ "$id" -ne 0 ] || fail "$ko: kfunc id $i is 0 (resolve_btfids did not run)"
		name=$(echo "$dump" | sed -n "s/^\[$id\] FUNC '\([^']*\)'.*/\1/p")
		[[ "$name" == bpf_gpu_ext_* ]] || fail "$ko: kfunc id $id names '${name:-nothing}'"
		echo "$ko: kfunc $name = BTF id $id"
	done
	echo "$ko: ABI $abi, struct_ops gpu_mem_ops and gpu_sched_ops, $cnt kfuncs resolved"
done
