# mk/dist.mk: build the otelcol-gpu collector distribution with ocb.
#
# Included by the top-level Makefile; also works on its own from the repository
# root: `make -f mk/dist.mk build`. All paths are relative to the repository
# root, which must be make's working directory (ocb resolves output_path from
# there).
#
# Targets:
#   build            bin/otelcol-gpu (rebuilt only when its inputs change)
#   bin/otelcol-gpu  the collector binary
#   dist-generate    regenerate build/dist (sources, go.mod, go.sum) with ocb
#   ocb-install      install ocb v$(OCB_VERSION) as $(OCB) if it is missing or another version
#   dist-clean       remove build/dist and bin/otelcol-gpu
#
# Why the recipe looks like this (DESIGN.md, "Go modules"): ocb's own
# `go mod tidy` stops on test-only dependencies of contrib components that the
# module proxy refuses (403), so ocb runs with -e added to GOFLAGS (go mod tidy
# accepts it, go mod download ignores it) and compilation is ours, not ocb's.
# ocb writes go.mod only when it also gets the modules, so it does not run with
# --skip-get-modules: that would leave build/dist without a go.mod.

# Standalone (`make -f mk/dist.mk`) when this is the only makefile read so far.
_dist_standalone := $(filter 1,$(words $(MAKEFILE_LIST)))
_dist_saved_default_goal := $(.DEFAULT_GOAL)

GO ?= go

OCB_VERSION := 0.155.0
ifeq ($(origin OCB),undefined)
OCB := $(or $(shell $(GO) env GOBIN),$(firstword $(subst :, ,$(shell $(GO) env GOPATH)))/bin)/builder
endif

DIST_CONFIG  := builder-config.yaml
DIST_DIR     := build/dist
DIST_BIN     := bin/otelcol-gpu
DIST_GOFLAGS := -buildvcs=false
# ocb strips symbols by default too; override with DIST_LDFLAGS= for a debuggable binary.
DIST_LDFLAGS ?= -s -w

# Everything that goes into the binary from this repository: Go sources (not
# tests, not build outputs or testdata) and the BPF objects bpf2go embeds.
DIST_SRCS := go.mod go.sum $(DIST_CONFIG) mk/dist.mk \
	$(shell find . \( -path ./.git -o -path ./build -o -path ./bin -o -path ./.device -o -name testdata \) -prune \
		-o -type f \( -name '*.go' ! -name '*_test.go' -o -name '*_bpfel.o' -o -name '*_bpfeb.o' \) -print 2>/dev/null | LC_ALL=C sort)

define dist_ensure_ocb
	@if ! '$(OCB)' version 2>&1 | grep -q 'version v$(OCB_VERSION)$$'; then \
		echo "installing ocb v$(OCB_VERSION) as $(OCB)"; \
		GOBIN='$(abspath $(dir $(OCB)))' GOFLAGS='$(DIST_GOFLAGS)' $(GO) install go.opentelemetry.io/collector/cmd/builder@v$(OCB_VERSION) || exit 1; \
	fi
endef

# ocb writes main*.go, components.go and go.mod into $(DIST_DIR), then runs
# go mod tidy (-e) and go mod download there.
define dist_generate
	$(dist_ensure_ocb)
	@mkdir -p $(dir $(DIST_DIR))
	GOFLAGS='$(DIST_GOFLAGS) -e' '$(OCB)' --config $(DIST_CONFIG) --skip-compilation
endef

.PHONY: build dist-generate ocb-install dist-clean

build: $(DIST_BIN)

ocb-install:
	$(dist_ensure_ocb)

dist-generate:
	$(dist_generate)

$(DIST_BIN): $(DIST_SRCS)
	$(dist_generate)
	@mkdir -p $(dir $@)
	cd $(DIST_DIR) && CGO_ENABLED=1 GOFLAGS='$(DIST_GOFLAGS)' $(GO) build -trimpath -ldflags='$(DIST_LDFLAGS)' -o $(CURDIR)/$@ .
	@touch $@

dist-clean:
	rm -rf $(DIST_DIR) $(DIST_BIN)

# Do not steal the including Makefile's default goal.
ifeq ($(_dist_standalone),1)
.DEFAULT_GOAL := build
else
.DEFAULT_GOAL := $(_dist_saved_default_goal)
endif
