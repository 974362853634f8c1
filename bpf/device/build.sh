#!/usr/bin/env bash
# build.sh - compile the device probes (*.bpf.c) into the objects devrt/jit
# compiles to PTX (go generate; make generate). DWARF is stripped and paths
# are made relative so the objects are the same on every machine; BTF stays
# (cilium/ebpf reads the maps from it).
set -euo pipefail
cd "${DIR:-$(dirname "$0")}"
CLANG=${CLANG:-clang-19}
STRIP=${STRIP:-llvm-strip-19}
MCPU=${MCPU:-v3}
for src in "$@"; do
	obj=${src%.c}.o
	"$CLANG" -target bpf -mcpu="$MCPU" -O2 -g -Wall -Werror \
		-fdebug-prefix-map="$PWD"=. -fdebug-compilation-dir=. \
		-idirafter /usr/include/x86_64-linux-gnu -I"$PWD" \
		-c "$src" -o "$obj"
	"$STRIP" -g "$obj"
done
