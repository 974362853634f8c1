#!/usr/bin/env bash
# The UVM tools source (receiver/gpuebpfreceiver/internal/uvmtools) on a real
# GPU, in one command:
#   1. builds bench/device/uvm/managed.cu with nvcc;
#   2. runs it under uvmcapture, which attaches a tracker before the program's
#      first touch of its managed buffer and records every event:
#        managed-16m     16 MiB, V2 entries (small enough to commit as a fixture)
#        managed-16m-v1  16 MiB, the V1 layout forced
#        managed-256m    up to 256 MiB, never more than 1/4 of free GPU memory
#   3. runs the uvmtools tests, TestFixtures on what was just recorded.
# Writes NAME.bin.gz + NAME.json per capture and uvm.log (all output, the
# summaries included) to $OUT.
#
# The GPU machine has no Go toolchain: build the two Go binaries here first,
#   mkdir -p .device
#   CGO_ENABLED=0 go build -o .device/uvmcapture ./receiver/gpuebpfreceiver/internal/uvmtools/cmd/uvmcapture
#   CGO_ENABLED=0 go test -c -o .device/uvmtools.test ./receiver/gpuebpfreceiver/internal/uvmtools
# then run, as root (pidfd_getfd needs CAP_SYS_PTRACE), with .device/uvmcapture
# and .device/uvmtools.test carried:
#   bash bench/device/uvm.sh
# To keep a fixture: copy $OUT/managed-16m.{bin.gz,json} to
# receiver/gpuebpfreceiver/internal/uvmtools/testdata/fixtures/.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

main() {
	cap=.device/uvmcapture
	tst=.device/uvmtools.test
	if [ ! -x $cap ] || [ ! -x $tst ]; then
		if command -v go >/dev/null; then
			mkdir -p .device
			CGO_ENABLED=0 go build -o $cap ./receiver/gpuebpfreceiver/internal/uvmtools/cmd/uvmcapture || exit 1
			CGO_ENABLED=0 go test -c -o $tst ./receiver/gpuebpfreceiver/internal/uvmtools || exit 1
		else
			echo "missing $cap / $tst and no go here: build them first (see the top of $0)"; exit 1
		fi
	fi

	echo "== machine"
	nvidia-smi -L; uname -r; head -1 /proc/driver/nvidia/version
	ls -l /dev/nvidia-uvm /dev/nvidia-uvm-tools
	nvidia-smi --query-gpu=memory.used,memory.free --format=csv

	echo "== build managed.cu"
	nvcc -O2 -arch=native -o /tmp/managed bench/device/uvm/managed.cu 2>&1 ||
		nvcc -O2 -arch=sm_90 -o /tmp/managed bench/device/uvm/managed.cu 2>&1 || exit 1

	start=/tmp/uvm-start
	capture() { # $1: name, $2: capture flags, rest: managed.cu flags
		local name=$1 flags=$2; shift 2
		echo "== capture $name"
		# shellcheck disable=SC2086
		timeout 150 $cap --out "$OUT" --name "$name" --wait-file $start $flags -- \
			/tmp/managed --start-file $start "$@"
		echo "uvmcapture exit $?"
	}
	capture managed-16m "" --max-mib 16 --random-pages 1024
	capture managed-16m-v1 "--version 1" --max-mib 16 --random-pages 1024
	capture managed-256m "" --max-mib 256 --random-pages 4096

	echo "== uvmtools tests on the recorded fixtures"
	(cd receiver/gpuebpfreceiver/internal/uvmtools &&
		UVMTOOLS_FIXTURES=$OUT ../../../../$tst -test.count=1 -test.v 2>&1 |
		grep -vE '^=== RUN|^    --- PASS: (TestDecode|FuzzDecode)/')
	nvidia-smi --query-gpu=memory.used,memory.free --format=csv
}

main 2>&1 | tee "$OUT/uvm.log"
ls -la "$OUT"
