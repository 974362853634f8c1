// SPDX-License-Identifier: Apache-2.0
/*
 * table.c - api_table.h as data: name, API, flags and class of every
 * interposed symbol.  Also linked into the devrt-symbols program, which
 * prints it for the Go test that compares it with the uprobe source's table.
 */
#include "devrt.h"

#define INFO(sym, api, ck, df, ...)					\
	[DEVRT_SYM_##sym] = { #sym, (ck), GPUEXT_API_##api, (df),	\
			      DEVRT_CLASS_OF(GPUEXT_API_##api) },

const struct devrt_sym_info devrt_syms[DEVRT_NSYMS] = {
	DEVRT_SYMBOLS(INFO, INFO)
};
