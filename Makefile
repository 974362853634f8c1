# otelcol-gpu: GPU observability collector.
#
#   make run       build the distribution and run it with deploy/config/default.yaml
#   make test      everything CI runs (installs what it needs)
#   make demo      the collector against the fake CUDA workload (no GPU needed)
#   make bench     side-by-side benchmarks
#   make generate  rebuild BPF objects (bpf2go, clang-19) and mdatagen code

SHELL := /bin/bash
GO ?= go
export GOFLAGS := -buildvcs=false
FAKECUDA := $(CURDIR)/build/fakecuda
DEVRT := $(CURDIR)/build/devrt

.DEFAULT_GOAL := build
include mk/dist.mk

.PHONY: deps generate check-generated fakecuda devrt kernel-modules kernel-test kernel-bench nvidia-patch-check vet unit test run demo bench clean

deps:
	@scripts/install-deps.sh

# Generated code: BPF objects and their Go bindings, mdatagen packages.
generate: deps
	$(GO) generate ./bpf/... ./devrt/jit/ ./receiver/... ./processor/...

# make test fails when the committed generated files differ from a fresh run.
check-generated: generate
	@if ! git diff --quiet -- bpf devrt/jit receiver processor; then \
		echo "generated files are stale; run 'make generate' and commit:"; \
		git diff --stat -- bpf devrt/jit receiver processor; exit 1; fi

fakecuda: deps
	$(MAKE) -C testdata/fakecuda OUT=$(FAKECUDA)

# The in-process device runtime (libgpuext-devrt.so), its tools and C tests.
devrt: deps
	$(MAKE) -C devrt OUT=$(DEVRT)

# The gpu_ext and gpu_ext_sim kernel modules, built against the pinned Debian
# kernel (scripts/kernel-env.sh), with their BTF and kfunc ids checked.
kernel-modules: deps
	$(MAKE) -C kernel-modules check

# gpu_ext's policies, loader and CLI in a real kernel: qemu boots the pinned
# Debian kernel with both modules and runs the Go tests that need them.
kernel-test: kernel-modules
	scripts/kernel-test.sh

# Hook cost with and without policies, and the policy replays, as tables.
kernel-bench: kernel-modules
	scripts/kernel-test.sh --bench

# The NVIDIA open-module patch series that calls gpu_ext, applied to the
# pinned upstream tag, built (all of RM, nvidia.ko, nvidia-uvm.ko) and loaded
# under qemu. Needs github.com once and 3.5-6.5 minutes: not part of test.
nvidia-patch-check: kernel-modules
	kernel-modules/nvidia/scripts/check.sh

vet:
	$(GO) vet ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
		if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted"; exit 1; fi

# Unit and integration tests. The integration tests load real BPF programs
# and attach real uprobes to the fake driver, so they need root; FAKECUDA
# tells them where the fake driver is, DEVRT where devrt's build is (its
# tests run the fake workload under LD_PRELOAD).
unit: fakecuda devrt
	FAKECUDA=$(FAKECUDA) DEVRT=$(DEVRT) $(GO) test -count=1 -timeout 20m ./...

test: deps check-generated vet unit build kernel-test
	bin/otelcol-gpu validate --config deploy/config/default.yaml
	scripts/shutdown-check.sh
	DAEMONSET_CONFIG_OUT=$(CURDIR)/build/daemonset-config.yaml $(GO) test -count=1 -run TestDaemonSetManifest ./deploy/kubernetes/
	POD_IP=127.0.0.1 OTLP_ENDPOINT=localhost:4317 K8S_NODE_NAME=node \
		bin/otelcol-gpu validate --config build/daemonset-config.yaml
	FAKECUDA_LIB=$(FAKECUDA)/libcuda.so.1 FAKECUDA_RT=$(FAKECUDA)/libcudart.so.12 \
		bin/otelcol-gpu validate --config deploy/config/demo.yaml
	@echo "make test: all checks passed"

run: build
	bin/otelcol-gpu --config deploy/config/default.yaml

# The collector traces the fake driver while the workload runs every
# scenario; the spans and metrics land in build/demo.jsonl and on stdout.
demo: build fakecuda
	scripts/demo.sh

bench: fakecuda devrt kernel-bench
	FAKECUDA=$(FAKECUDA) DEVRT=$(DEVRT) scripts/bench.sh

clean: dist-clean
	rm -rf build bin
