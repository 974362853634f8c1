#!/usr/bin/env bash
# kernel-env.sh - the pinned Linux kernel our modules build against and boot
# in (qemu), set up once and cached under build/kernel/.
#
# Debian bookworm-backports ships the 6.12 cloud kernel as debs; we download
# (never install) the image and its matching headers + kbuild debs of ONE
# version and unpack them with dpkg-deb. That gives everything an
# out-of-tree module with BTF needs:
#   - the headers tree with .config and Module.symvers,
#   - vmlinux (Debian ships a BTF-only vmlinux in the headers package: the
#     base BTF that module BTF is split against),
#   - resolve_btfids (linux-kbuild), which fills the module's BTF_ID sets,
#   - pahole (dwarves, installed by scripts/install-deps.sh), which Kbuild
#     runs to write the module's .BTF section; struct_ops types and kfuncs
#     registered by a module only work with it,
#   - vmlinuz to boot under qemu.
#
# Usage: scripts/kernel-env.sh            set up (idempotent), print KDIR
#        scripts/kernel-env.sh --print    print the variables without work
# Prints shell assignments (KVER, KDIR, KIMAGE) a caller can eval.
set -euo pipefail

# The one pinned version: image and headers must match exactly.
KVER_DEB=6.12.95-1~bpo12+1
KVER=6.12.95+deb12
FLAVOUR=cloud-amd64

ROOT=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${KERNEL_ENV_DIR:-$ROOT/build/kernel}
UNPACK=$CACHE/root
KDIR=$UNPACK/usr/src/linux-headers-$KVER-$FLAVOUR
KIMAGE=$UNPACK/boot/vmlinuz-$KVER-$FLAVOUR

print() {
	echo "KVER=$KVER"
	echo "KDIR=$KDIR"
	echo "KIMAGE=$KIMAGE"
}

if [ "${1:-}" = "--print" ]; then
	print
	exit 0
fi

pkgs=(
	"linux-image-$KVER-$FLAVOUR-unsigned"
	"linux-headers-$KVER-$FLAVOUR"
	"linux-headers-$KVER-common"
	"linux-kbuild-$KVER"
)

stamp=$CACHE/.unpacked-$KVER_DEB
if [ -f "$stamp" ] && [ -f "$KDIR/vmlinux" ] && [ -f "$KIMAGE" ]; then
	print
	exit 0
fi

command -v pahole >/dev/null || { echo "kernel-env: pahole missing; run scripts/install-deps.sh" >&2; exit 1; }

mkdir -p "$CACHE/debs"
need=()
for p in "${pkgs[@]}"; do
	ls "$CACHE/debs/${p}_${KVER_DEB}_"*.deb >/dev/null 2>&1 || need+=("$p=$KVER_DEB")
done
if [ ${#need[@]} -gt 0 ]; then
	if ! apt-cache show "${need[0]}" >/dev/null 2>&1; then
		if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
			echo "kernel-env: adding bookworm-backports to apt sources" >&2
			cat > /etc/apt/sources.list.d/bookworm-backports.sources <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
		fi
		apt-get update -qq
	fi
	echo "kernel-env: downloading ${need[*]}" >&2
	# apt-get download writes to the current directory; _apt cannot write
	# under build/, so it warns and downloads as root, which is fine.
	(cd "$CACHE/debs" && apt-get download -qq "${need[@]}" 2>&1 | grep -v "unsandboxed" >&2 || true)
	for p in "${pkgs[@]}"; do
		ls "$CACHE/debs/${p}_${KVER_DEB}_"*.deb >/dev/null 2>&1 || { echo "kernel-env: download of $p failed" >&2; exit 1; }
	done
fi

rm -rf "$UNPACK"
mkdir -p "$UNPACK"
for d in "$CACHE"/debs/*_"${KVER_DEB}"_*.deb; do
	dpkg-deb -x "$d" "$UNPACK"
done
# The flavour's Makefile includes the common headers by absolute path.
sed -i "s|^include /usr/src/|include $UNPACK/usr/src/|" "$KDIR/Makefile"
for f in "$KDIR/vmlinux" "$KIMAGE" "$KDIR/tools/bpf/resolve_btfids/resolve_btfids" "$KDIR/Module.symvers"; do
	[ -e "$f" ] || { echo "kernel-env: $f missing after unpacking" >&2; exit 1; }
done
# The module BTF is split against this vmlinux's BTF; without it Kbuild
# silently skips BTF generation, so check it is there.
if ! readelf -S "$KDIR/vmlinux" | grep -q '\.BTF'; then
	echo "kernel-env: $KDIR/vmlinux has no .BTF section" >&2
	exit 1
fi
touch "$stamp"
print
