#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# check-symbols.sh - check the ELF symbols of a fakecuda build.
#
# Why this exists: a uprobe is attached to an address.  If the compiler folded
# two entry points into one body, or a symbol went missing, probe tests would
# count the wrong calls without any error.  This script fails when:
#   - an entry point listed in api_list.h is not exported (or is empty);
#   - a library exports a function that api_list.h does not list;
#   - two exported cu*/cuda* functions of one library share an address;
#   - libcudart imports cu* symbols or links libcuda (it must dlopen it);
#   - a SONAME is wrong, or the workload lacks its kernel stub symbol.
#
# Usage: check-symbols.sh [BUILD_DIR]   (default: build/fakecuda of the repo)

set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../build/fakecuda}
list=$here/api_list.h
fail=0

err() {
	echo "check-symbols: $*" >&2
	fail=1
}

# Names listed as D(name) or R(name) in api_list.h.
listed() {
	sed -n "s/^[[:space:]]*$1(\([A-Za-z0-9_]*\)).*/\1/p" "$list" | sort
}

# "address size name" of each exported function.
exported() {
	nm -D -S --defined-only "$1" | awk '$3 == "T" || $3 == "W" || $3 == "i" { print $1, $2, $4 }'
}

check_lib() {
	lib=$1 tag=$2 soname=$3
	shift 3
	extra="$*"

	before=$fail
	if [ ! -f "$lib" ]; then
		err "$lib: missing (build first)"
		return
	fi
	actual=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	[ "$actual" = "$soname" ] || err "$lib: SONAME is '$actual', want $soname"

	syms=$(exported "$lib")
	echo "$syms" | awk '{ print $3 }' | sort >"$tmpdir/have"
	listed "$tag" >"$tmpdir/want"

	for s in $(comm -23 "$tmpdir/want" "$tmpdir/have"); do
		err "$lib: $s is listed in api_list.h but not exported"
	done
	for s in $(comm -13 "$tmpdir/want" "$tmpdir/have"); do
		case " $extra " in
		*" $s "*) ;;
		*) err "$lib: exports $s, which api_list.h does not list" ;;
		esac
	done
	echo "$syms" | awk -v lib="$lib" '
		$3 ~ /^(cu|cuda|__cuda)/ {
			if ($1 in seen)
				printf "check-symbols: %s: %s and %s share address %s\n",
				       lib, seen[$1], $3, $1
			seen[$1] = $3
			if ($2 !~ /[1-9a-f]/)
				printf "check-symbols: %s: %s has size 0\n", lib, $3
		}' >"$tmpdir/dups"
	if [ -s "$tmpdir/dups" ]; then
		cat "$tmpdir/dups" >&2
		fail=1
	fi
	[ "$fail" != "$before" ] && return
	echo "ok: $lib: $(wc -l <"$tmpdir/want") entry points, distinct addresses"
}

tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT

check_lib "$out/libcuda.so.1" D libcuda.so.1 fakecuda_call_counts
check_lib "$out/libcudart.so.12" R libcudart.so.12

if [ -f "$out/libcudart.so.12" ]; then
	imports=$(nm -D --undefined-only "$out/libcudart.so.12" |
		awk '{ print $NF }' | grep -E '^cu' || true)
	[ -z "$imports" ] || err "libcudart.so.12 imports driver symbols: $imports"
	if readelf -d "$out/libcudart.so.12" | grep -q 'NEEDED.*libcuda\.so'; then
		err "libcudart.so.12 links libcuda; it must dlopen it"
	fi
	echo "ok: libcudart.so.12 reaches the driver only through dlopen"
fi

if [ -f "$out/workload" ]; then
	nm "$out/workload" | grep -q ' T _Z11saxpyKernelfPKfPf$' ||
		err "workload: no _Z11saxpyKernelfPKfPf symbol for the kernel stub"
	echo "ok: workload has the kernel stub symbol"
else
	err "$out/workload: missing (build first)"
fi

[ "$fail" = 0 ] || exit 1
echo "check-symbols: all good"
