/* A process whose function addresses the symbolizer test looks up: it prints
 * the address of a C++-mangled-looking function and of a static one, then
 * waits for stdin to close. Built position-independent, as CUDA programs are. */
#include <stdio.h>
#include <unistd.h>

void saxpy_stub(void) __asm__("_Z11saxpyKernelfPKfPf");
__attribute__((noinline)) void saxpy_stub(void) { __asm__ volatile(""); }
__attribute__((noinline)) static int helper(int x) { return x * 3; }

int main(void)
{
	char c;
	printf("%p %p\n", (void *)saxpy_stub, (void *)helper);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return helper(0);
}
