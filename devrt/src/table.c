// SPDX-License-Identifier: Apache-2.0
/*
 * table.c - api_table.h as data: name, API, flags and class of every
 * interposed symbol.  Also linked into the devrt-symbols program, which
 * prints it for the Go test that compares it with the uprobe source's table.
 */
#include "devrt.h"

#define INFO(sym, api, ck, df, ...)					\
	[DEVRT_SYM_##sym] = { #sym, (ck), GPUEXT_API_##api, (df),	\
			      DEVRT_CLASS_OF(GPUEXT_API_##api),		\
			      DEVRT_HEAD(GPUEXT_API_##api, (ck)) },

/* kind (named if the call has a name argument), api, source, flags. */
#define DEVRT_HEAD(api, ck)						\
	((__u64)((ck) >> GPUEXT_CK_NAME_SHIFT ? GPUEXT_KIND_CALL_NAMED :	\
						GPUEXT_KIND_CALL) |	\
	 (__u64)(api) << 16 | (__u64)GPUEXT_SOURCE_DEVRT << 32 |	\
	 (__u64)((ck) & GPUEXT_CK_STACK ? GPUEXT_F_STACK_VALID : 0) << 48)

const struct devrt_sym_info devrt_syms[DEVRT_NSYMS] = {
	DEVRT_SYMBOLS(INFO, INFO)
};
