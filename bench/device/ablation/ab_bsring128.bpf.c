// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsring128: block_sched's ring record without its lanes count, in a ring
 * of 128 shard(s) (ablation.h, AB_BSRING). */
#include "ablation.h"
AB_BSRING(128)
