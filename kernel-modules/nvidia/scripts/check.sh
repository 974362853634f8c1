#!/usr/bin/env bash
# check.sh - proves that kernel-modules/nvidia/patches/ applies to the pinned
# NVIDIA open-gpu-kernel-modules tag and builds into nvidia.ko and
# nvidia-uvm.ko that link against gpu_ext, without a GPU:
#
#  1. the pinned upstream tree (git clone --depth 1, cached under
#     build/nvidia/), a fresh shared clone of it, `git apply --check` of each
#     patch, then `git am` of the series;
#  2. the two copies of nv-gpu-ext.h are identical;
#  3. RM (src/nvidia -> nv-kernel.o, every translation unit, NVIDIA's own
#     flags) and kernel-open's nvidia.ko + nvidia-uvm.ko against the pinned
#     Debian 6.12 headers (scripts/kernel-env.sh), twice:
#       stock    (no NV_GPU_EXT_DIR): the .ko files reference no gpu_ext symbol;
#       gpu_ext  (NV_GPU_EXT_DIR + gpu_ext's Module.symvers): modpost resolves
#                every symbol (no KBUILD_MODPOST_WARN), each gpu_ext entry point
#                is imported with gpu_ext's CRC, and the modules depend on gpu_ext;
#     and no compiler warning names a file the series touches;
#  4. (unless NVIDIA_CHECK_QEMU=0) the patched nvidia.ko in the pinned kernel
#     under qemu: refused with "Unknown symbol gpu_ext_*" before gpu_ext.ko is
#     loaded; after it, every symbol resolves and only the missing GPU stops
#     it (-ENODEV, "NVRM: No NVIDIA ..."). nvidia-uvm.ko needs a live
#     nvidia.ko, so it is not loaded.
#
# Needs the network once (github.com for the clone; deb.debian.org through
# kernel-env.sh) and 3.5 to 6.5 minutes of 2 cores; hence `make
# nvidia-patch-check`, not part of `make test`.
#
#   NVIDIA_TAG=580.142        the upstream tag (NVIDIA_COMMIT is checked for the default)
#   NVIDIA_GIT=<url or path>  where to clone it from (default: GitHub)
#   NVIDIA_CHECK_QEMU=0       skip step 4
#   JOBS=2                    make -j
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
PATCHES=$ROOT/kernel-modules/nvidia/patches
DEFAULT_TAG=580.142
DEFAULT_COMMIT=1a5075f82128be3603d4a4657c7b689234306778
TAG=${NVIDIA_TAG:-$DEFAULT_TAG}
GIT_URL=${NVIDIA_GIT:-https://github.com/NVIDIA/open-gpu-kernel-modules.git}
DIR=$ROOT/build/nvidia
UPSTREAM=$DIR/upstream-$TAG
WORK=$DIR/work
OUT=$DIR/out
JOBS=${JOBS:-2}
# Files the series touches; a compiler warning naming one fails the check.
TOUCHED='uvm_gpu_ext\.[ch]|uvm_perf_prefetch\.c|uvm_pmm_gpu\.[ch]|uvm\.c|nv-gpu-ext\.[ch]|kernel_channel_group_api\.c'
UVM_SYMS="gpu_ext_abi_version gpu_ext_block_activate gpu_ext_block_access gpu_ext_evict_prepare gpu_ext_page_prefetch gpu_ext_page_prefetch_iter"
NV_SYMS="gpu_ext_abi_version gpu_ext_sched_task_init gpu_ext_sched_task_bind gpu_ext_sched_task_destroy"

say() { echo "nvidia-patch-check: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
start=$(date +%s)
mkdir -p "$DIR"
# One run at a time: the work tree and outputs are shared.
exec 9>"$DIR/.lock"
flock 9

# 1. The pinned tree, once; a fresh copy with the series applied, every run.
if [ ! -d "$UPSTREAM/.git" ]; then
	say "cloning $GIT_URL $TAG"
	rm -rf "$UPSTREAM.tmp"
	git -c advice.detachedHead=false clone -q --depth 1 --branch "$TAG" "$GIT_URL" "$UPSTREAM.tmp"
	mv "$UPSTREAM.tmp" "$UPSTREAM"
fi
head=$(git -C "$UPSTREAM" rev-parse HEAD)
if [ "$TAG" = "$DEFAULT_TAG" ] && [ "$head" != "$DEFAULT_COMMIT" ]; then
	fail "$UPSTREAM is at $head, $TAG is $DEFAULT_COMMIT"
fi
rm -rf "$WORK"
git -c advice.detachedHead=false clone -q --shared "$UPSTREAM" "$WORK"
for p in "$PATCHES"/*.patch; do
	# Each patch on top of the previous ones: a failure names its patch.
	git -C "$WORK" apply --check "$p" || fail "$(basename "$p") does not apply to $TAG"
	git -C "$WORK" -c user.name=nvidia-patch-check -c user.email=check@invalid am -q "$p" ||
		fail "git am $(basename "$p")"
done
say "$(ls "$PATCHES"/*.patch | wc -l) patches applied to $TAG ($head)"

# 2. One header, two trees.
cmp -s "$WORK/kernel-open/common/inc/nv-gpu-ext.h" "$WORK/src/nvidia/arch/nvalloc/unix/include/nv-gpu-ext.h" ||
	fail "the two copies of nv-gpu-ext.h differ"

# 3. Build. The kernel: the pinned Debian headers; its flavour Makefile
# includes the common tree, which is kernel-open's SYSSRC.
eval "$("$ROOT/scripts/kernel-env.sh")"
SYSSRC=$(sed -n 's|^include \(.*\)/Makefile$|\1|p' "$KDIR/Makefile")
[ -d "$SYSSRC" ] || fail "no common headers tree in $KDIR/Makefile"
make -s -C "$ROOT/kernel-modules" >/dev/null
SYMVERS=$ROOT/build/kmod/src/kernel-modules/gpu_ext/Module.symvers
[ -f "$SYMVERS" ] || fail "$SYMVERS missing after make -C kernel-modules"

say "building nv-kernel.o (RM, $(grep -c '^SRCS += ' "$WORK/src/nvidia/srcs.mk") C files)"
make -C "$WORK/src/nvidia" -j"$JOBS" >"$DIR/rm.log" 2>&1 || { tail -30 "$DIR/rm.log"; fail "RM build (log: $DIR/rm.log)"; }
(cd "$WORK/kernel-open/nvidia" && ln -sf ../../src/nvidia/_out/Linux_x86_64/nv-kernel.o nv-kernel.o_binary)

kbuild() { # variant, extra make args...
	local variant=$1
	shift
	# Kbuild rebuilds every object whose flags changed (NV_GPU_EXT is in
	# ccflags-y), so the second variant needs no clean.
	make -C "$WORK/kernel-open" -j"$JOBS" modules SYSSRC="$SYSSRC" SYSOUT="$KDIR" \
		NV_KERNEL_MODULES="nvidia nvidia-uvm" "$@" >"$DIR/$variant.log" 2>&1 ||
		{ tail -30 "$DIR/$variant.log"; fail "$variant kernel-open build (log: $DIR/$variant.log)"; }
	mkdir -p "$OUT/$variant"
	cp "$WORK/kernel-open/nvidia.ko" "$WORK/kernel-open/nvidia-uvm.ko" "$OUT/$variant/"
	cp "$WORK/kernel-open/nvidia.mod.c" "$WORK/kernel-open/nvidia-uvm.mod.c" "$OUT/$variant/"
}

warnings() { # logs...
	if grep -E "($TOUCHED):[0-9]+:[0-9]+: (warning|error)" "$@"; then
		fail "compiler warnings in files the series touches"
	fi
}

say "building stock nvidia.ko, nvidia-uvm.ko"
kbuild stock
for ko in nvidia nvidia-uvm; do
	if nm -u "$OUT/stock/$ko.ko" | grep -q ' gpu_ext_'; then
		fail "stock $ko.ko references gpu_ext"
	fi
done

say "building nvidia.ko, nvidia-uvm.ko against gpu_ext"
kbuild gpu_ext NV_GPU_EXT_DIR="$ROOT/kernel-modules/gpu_ext" KBUILD_EXTRA_SYMBOLS="$SYMVERS"
warnings "$DIR/rm.log" "$DIR/stock.log" "$DIR/gpu_ext.log"

imports() { # ko, symbols...
	local ko=$1
	shift
	local modc=$OUT/gpu_ext/$ko.mod.c
	for s in "$@"; do
		crc=$(awk -v s="$s" '$2 == s { print $1 }' "$SYMVERS")
		[ -n "$crc" ] || fail "$s is not exported by gpu_ext ($SYMVERS)"
		grep -q "{ $crc, \"$s\" }" "$modc" || fail "$ko.ko does not import $s with gpu_ext's CRC $crc"
	done
	grep -q 'MODULE_INFO(depends, ".*gpu_ext.*")' "$modc" || fail "$ko.ko does not depend on gpu_ext"
	say "$ko.ko imports $# gpu_ext symbols with matching CRCs"
}
imports nvidia-uvm $UVM_SYMS
imports nvidia $NV_SYMS

# 4. Load the patched nvidia.ko in the pinned kernel.
if [ "${NVIDIA_CHECK_QEMU:-1}" != 0 ]; then
	VM=$DIR/vm
	R=$VM/root
	rm -rf "$VM"
	mkdir -p "$R"/{bin,proc,sys,dev,kmod}
	cp "$(command -v busybox)" "$R/bin/busybox"
	cp "$ROOT/build/kmod/gpu_ext.ko" "$OUT/gpu_ext/nvidia.ko" "$R/kmod/"
	cat >"$R/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
echo LOADTEST-START
insmod /kmod/nvidia.ko; echo "STEP nvidia-before-gpu_ext rc=$?"
dmesg | grep -E 'Unknown symbol|disagrees' | sed 's/^/DMESG1 /'
insmod /kmod/gpu_ext.ko; echo "STEP gpu_ext rc=$?"
dmesg -c >/dev/null
insmod /kmod/nvidia.ko 2>&1 | sed 's/^/INSMOD /'; echo "STEP nvidia-after-gpu_ext"
dmesg | grep -E 'NVRM|nvidia|Unknown symbol|disagrees|BUG|Oops' | sed 's/^/DMESG2 /'
echo LOADTEST-END
poweroff -f
EOF
	chmod +x "$R/init"
	(cd "$R" && find . | cpio -o -H newc --quiet >"$VM/initrd.cpio")
	say "booting $KIMAGE under qemu ($(du -h "$VM/initrd.cpio" | cut -f1) initramfs)"
	timeout 300 qemu-system-x86_64 -accel tcg -cpu qemu64,-cx16 -m 1024 -smp 1 -kernel "$KIMAGE" \
		-initrd "$VM/initrd.cpio" -append "console=ttyS0 rdinit=/init panic=-1 quiet" \
		-nographic -no-reboot >"$VM/serial.log" 2>&1 || true
	log=$(tr -d '\r' <"$VM/serial.log" | sed -n '/LOADTEST-START/,/LOADTEST-END/p')
	echo "$log" | sed 's/^/  /' >&2
	echo "$log" | grep -q LOADTEST-END || fail "no LOADTEST-END in $VM/serial.log (timeout or crash)"
	echo "$log" | grep -q 'STEP nvidia-before-gpu_ext rc=0' && fail "nvidia.ko loaded without gpu_ext"
	echo "$log" | grep -q 'DMESG1 .*Unknown symbol gpu_ext_' || fail "no 'Unknown symbol gpu_ext_*' without gpu_ext"
	echo "$log" | grep -q 'STEP gpu_ext rc=0' || fail "gpu_ext.ko did not load"
	echo "$log" | grep -qE 'DMESG2 .*(Unknown symbol|disagrees|BUG|Oops)' && fail "nvidia.ko after gpu_ext: unresolved symbols or a crash"
	echo "$log" | grep -qE 'DMESG2 .*NVRM: No NVIDIA' || fail "nvidia.ko after gpu_ext did not reach its device probe"
	say "qemu: nvidia.ko needs gpu_ext, and with it resolves every symbol and stops only at 'no GPU'"
fi

say "OK in $(($(date +%s) - start)) s; modules in $OUT/{stock,gpu_ext}"
