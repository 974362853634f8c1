// SPDX-License-Identifier: Apache-2.0
/*
 * sha256.c - SHA-256 (FIPS 180-4), the content hash of the PTX devrt sends
 * the collector.  The collector's cache of patched modules is keyed by it
 * and the collector checks it against the bytes it received, so a strong
 * hash with a standard definition: Go's crypto/sha256 computes the same.
 * Only module loads use it (tens of MB/s is plenty); tests check it against
 * the FIPS examples and Go's.
 */
#include <string.h>

#include "inject.h"

static const __u32 K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
	0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
	0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
	0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
	0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
	0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
	0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
	0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline __u32 ror(__u32 x, int n) { return x >> n | x << (32 - n); }

static void block(__u32 h[8], const unsigned char *p)
{
	__u32 w[64], a, b, c, d, e, f, g, hh, t1, t2;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (__u32)p[4 * i] << 24 | (__u32)p[4 * i + 1] << 16 |
		       (__u32)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 64; i++) {
		__u32 s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ w[i - 15] >> 3;
		__u32 s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ w[i - 2] >> 10;

		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	a = h[0], b = h[1], c = h[2], d = h[3];
	e = h[4], f = h[5], g = h[6], hh = h[7];
	for (i = 0; i < 64; i++) {
		t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
		     ((e & f) ^ (~e & g)) + K[i] + w[i];
		t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
		     ((a & b) ^ (a & c) ^ (b & c));
		hh = g, g = f, f = e, e = d + t1;
		d = c, c = b, b = a, a = t1 + t2;
	}
	h[0] += a, h[1] += b, h[2] += c, h[3] += d;
	h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

void devrt_sha256(const void *data, size_t len, __u8 out[32])
{
	__u32 h[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	const unsigned char *p = data;
	unsigned char tail[128];
	size_t n = len, rest, pad;
	__u64 bits = (__u64)len * 8;
	int i;

	for (; n >= 64; n -= 64, p += 64)
		block(h, p);
	/* The last partial block, 0x80, zeros, and the length in bits. */
	rest = n;
	memset(tail, 0, sizeof(tail));
	if (rest)
		memcpy(tail, p, rest);
	tail[rest] = 0x80;
	pad = rest < 56 ? 64 : 128;
	for (i = 0; i < 8; i++)
		tail[pad - 1 - i] = (unsigned char)(bits >> (8 * i));
	block(h, tail);
	if (pad == 128)
		block(h, tail + 64);
	for (i = 0; i < 8; i++) {
		out[4 * i] = (__u8)(h[i] >> 24);
		out[4 * i + 1] = (__u8)(h[i] >> 16);
		out[4 * i + 2] = (__u8)(h[i] >> 8);
		out[4 * i + 3] = (__u8)h[i];
	}
}
