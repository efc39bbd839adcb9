/*
 * What every source file of the kernel shares: the public header, the
 * platform switches, the hash finalizer and byte-order helpers, and the
 * run-time SIMD choice (cpu.c). Not part of the API: nothing here is exported.
 */
#ifndef NEARDUP_INTERNAL_H
#define NEARDUP_INTERNAL_H

#include "neardup.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define ND_X86 1
#include <immintrin.h>
#else
#define ND_X86 0
#endif

#define ND_EXPORT __attribute__((visibility("default")))
#define ND_LIKELY(x) __builtin_expect(!!(x), 1)
#define ND_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* The SIMD paths a call may take: none with ND_FLAG_SCALAR, else what the CPU
 * offers (nd_simd_level, computed once in cpu.c). */
static inline unsigned nd_active(unsigned flags) {
    return (flags & ND_FLAG_SCALAR) ? 0u : nd_simd_level();
}

#define ND_M1 0x9E3779B97F4A7C15ULL /* word chunk multiplier (odd) */
#define ND_B 0xD6E8FEB86659FD93ULL  /* rolling polynomial base (odd) */

static inline uint64_t fmix64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

/* derive independent 64-bit constants from the user seed */
static inline uint64_t seed_part(uint64_t seed, uint64_t tag) {
    return fmix64(seed * 0x2545F4914F6CDD1DULL + tag * 0x9E3779B97F4A7C15ULL + 0x632BE59BD9B4E019ULL);
}

static inline uint32_t load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void store_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static inline uint64_t load_le64(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, sizeof x);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    return x;
}

#endif
