#!/usr/bin/env bash
# Puts what bench/device/*.sh needs into .device/ (git-ignored), small enough
# to travel to the GPU machine: the collector binary, xz-compressed.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
mkdir -p .device
xz -T0 -6 -c bin/otelcol-gpu > .device/otelcol-gpu.xz
# The NVML package's tests, for BenchmarkScrapeNVML against the real library.
go test -c -o .device/nvml.test ./receiver/gpuebpfreceiver/internal/nvml/
ls -la .device
