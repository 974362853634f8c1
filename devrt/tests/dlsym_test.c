// SPDX-License-Identifier: Apache-2.0
/*
 * dlsym_test - run with LD_PRELOAD=libgpuext-devrt.so: devrt's dlsym must
 * keep dlsym(RTLD_NEXT) relative to the real caller (see dlsym_next.c), and
 * leave lookups of names it does not wrap alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int lookup_next(void);

int main(void)
{
	void *self = dlopen(NULL, RTLD_NOW);
	int got = lookup_next();

	if (got != 3) {
		fprintf(stderr, "dlsym_test: dlsym(RTLD_NEXT) found probe %d, want 3\n",
			got);
		return 1;
	}
	if (dlsym(self, "strlen") != (void *)strlen ||
	    dlsym(RTLD_DEFAULT, "no_such_symbol_anywhere") != NULL) {
		fprintf(stderr, "dlsym_test: plain lookups changed\n");
		return 1;
	}
	printf("ok: dlsym(RTLD_NEXT) relative to its caller, other lookups untouched\n");
	return 0;
}
