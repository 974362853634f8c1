// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsentry: block_sched's entry alone. */
#include "ablation.h"
AB_BLOCK_ENTRY
AB_NOP_EXIT
