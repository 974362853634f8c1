// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_timer: %globaltimer at entry and exit, no memory. */
#include "ablation.h"
SEC("gpu/entry/*") int ab_entry(const struct gpuext_dev_ctx *ctx) { return bpf_get_globaltimer() & 1; }
SEC("gpu/exit/*") int ab_exit(const struct gpuext_dev_ctx *ctx) { return bpf_get_globaltimer() & 1; }
