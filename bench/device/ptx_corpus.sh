#!/bin/bash
# Builds the PTX corpus of devrt/ptx on a GPU machine: nvcc PTX of
# bench/device/ptx/kernels.cu (sm_90; with and without -lineinfo, and -G) and
# the PTX Triton generates for three kernels, then checks that ptxas accepts
# each file. Output: $OUT/corpus/*.ptx and $OUT/ptxas.txt.
set -u
cd "$(dirname "$0")/ptx"
C=$OUT/corpus; mkdir -p "$C"
export PATH=/usr/local/cuda/bin:$PATH
nvcc --version | tail -2
nvcc -ptx -arch=sm_90 -o "$C/nvcc_kernels.ptx" kernels.cu
nvcc -ptx -arch=sm_90 -lineinfo -o "$C/nvcc_kernels_lineinfo.ptx" kernels.cu
nvcc -ptx -arch=sm_90 -G -o "$C/nvcc_kernels_debug.ptx" kernels.cu
nvcc -ptx -arch=sm_90 -rdc=true -o "$C/nvcc_kernels_rdc.ptx" kernels.cu
/opt/torch/.venv/bin/python triton_kernels.py "$C"
for f in "$C"/*.ptx; do
	arch=sm_90; grep -q "sm_90a" "$f" && arch=sm_90a
	if ptxas -arch=$arch -o /dev/null "$f" 2>"$OUT/err.txt"; then echo "ptxas ok $(basename "$f")"; else echo "ptxas FAIL $(basename "$f"): $(head -3 "$OUT/err.txt")"; fi
done | tee "$OUT/ptxas.txt"
ls -la "$C"
