// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//go:build ignore
/* ab_bsregearly: ab_bsreg with every exit reading the end time before its
 * count (ab_bsvar.h). */
#define AB_EARLY 1
#include "ab_bsreg.bpf.c"
