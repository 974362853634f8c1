#!/usr/bin/env bash
# Puts what bench/device/*.sh needs into .device/ (git-ignored), small enough
# to travel to the GPU machine: the collector binary, xz-compressed.
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build
mkdir -p .device
xz -T0 -6 -c bin/otelcol-gpu > .device/otelcol-gpu.xz
ls -la .device
