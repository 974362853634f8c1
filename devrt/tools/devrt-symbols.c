// SPDX-License-Identifier: Apache-2.0
/*
 * devrt-symbols - prints devrt's table of reported symbols, one per line:
 *
 *     symbol api flags class
 *
 * api is the GPUEXT_API_* id, flags the GPUEXT_CK_* bits above it (as the
 * uprobe cookie carries them), class the GPUEXT_CLASS_* bit, all decimal.
 * The Go test receiver/gpuebpfreceiver/internal/cudaprobe/devrt_table_test.go
 * checks that the lines equal the uprobe source's table.  Symbols devrt
 * interposes without reporting them (the entry-point APIs) are not listed.
 */
#include <stdio.h>

#include "devrt.h"

int main(void)
{
	int i;

	for (i = 0; i < DEVRT_NSYMS; i++) {
		const struct devrt_sym_info *s = &devrt_syms[i];

		if (s->api == GPUEXT_API_NONE)
			continue;
		printf("%s %u %llu %u\n", s->name, s->api,
		       (unsigned long long)s->ck, s->cls);
	}
	return 0;
}
