/* A library exporting one probed function under two names (the second an
 * ELF alias of the first): the attacher must probe the address once. */
int cuCtxSynchronize(void) { return 0; }
int cuCtxSynchronize_alias(void) __attribute__((alias("cuCtxSynchronize")));
int cuStreamSynchronize(void *s) __attribute__((alias("cuCtxSynchronize_impl")));
int cuStreamSynchronize_ptsz(void *s) __attribute__((alias("cuCtxSynchronize_impl")));
int cuCtxSynchronize_impl(void *s) { return s == 0; }
