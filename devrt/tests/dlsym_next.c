// SPDX-License-Identifier: Apache-2.0
/*
 * dlsym_next.c - built twice: libdlsym-next.so (PROBE = 2) and
 * libdlsym-last.so (PROBE = 3), linked in that order into dlsym-test.
 * lookup_next() in the first asks dlsym(RTLD_NEXT, "probe"), which must
 * find the second library's probe: the one after its caller.  A dlsym
 * interposer that called the real dlsym normally (not as a tail call)
 * would make itself the caller and find the first library's.
 */
#include <dlfcn.h>

int probe(void)
{
	return PROBE;
}

#if PROBE == 2
int lookup_next(void)
{
	int (*fn)(void) = (int (*)(void))dlsym(RTLD_NEXT, "probe");

	return fn ? fn() : -1;
}
#endif
