// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_occexit1: warp_occupancy (bpf/device) whose exit makes one reduction,
 * its lane-ns, not its threads too (timing only: what the second
 * reduction of every warp's exit costs; ab_occnoexit.bpf.c). */
#define AB_OCC_EXIT1 1
#include "ab_occnoexit.bpf.c"
