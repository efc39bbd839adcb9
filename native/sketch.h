/*
 * The sketch's state and its end of the scanner, an internal header shared by
 * sketch.c (tokenizer 1) and sketch2.c (tokenizers 2 to 4). The tokenizers are
 * scanned in separate files because tokenizer 2's code beside tokenizer 1's
 * in one file changed how the compiler laid out tokenizer 1's AVX2 loop, which
 * then ran 30% slower (bench/kernel.py --baseline); ND_SCAN_V2 (scan.h) keeps
 * tokenizer 2 out of sketch.c.
 */
#ifndef NEARDUP_SKETCH_H
#define NEARDUP_SKETCH_H

#include "scan.h"

typedef struct {
    nd_scan scan; /* first: scan_emit casts back */
    /* Distinct shingle set: open addressing, 0 = empty slot. A hash's home slot
     * is its top `bits` bits, so the table is ordered by value (the fingerprint
     * value is the top 32 bits): probing runs forward into `spill` extra slots
     * past the end and never wraps, and the bottom-N is read off the front of
     * the table at the end. */
    uint64_t *tab;
    size_t tab_alloc; /* slots allocated */
    size_t slots, spill;
    unsigned shift; /* 64 - bits */
    size_t used, limit;
    int has_zero;
    uint64_t count;
    /* one-permutation MinHash; a bin still at 0xFFFFFFFF is empty unless its
     * bit is set in vmax (a real value of 0xFFFFFFFF, about 2^-32 per shingle) */
    uint32_t *sig; /* the caller's row */
    uint32_t num_perm;
    uint64_t vmax[ND_MAX_NUM_PERM / 64];
    /* bottom-N gathering */
    uint32_t *fp; /* FP_BUF(fp_size) */
    uint32_t fp_size;
    int err;
} nd_ctx;

#define FP_BUF(n) (2 * (size_t)(n) + 64)

/* Shingle hashes -> distinct set; each new one updates its signature bin (sketch.c). */
void nd_flush_shingles(nd_ctx *c, const uint64_t *hs, uint32_t nh);

/* Tokenizer 1's AVX2 word loop (sketch.c) over [p, end), whole 64-byte blocks
 * of plain ASCII that both tokenizers read alike: tokenizer 2's sketch hands it
 * such runs (sketch2.c says why). */
const uint8_t *nd_sketch_ascii1(nd_ctx *c, nd_roll *r, nd_word *w, const uint8_t *p,
                                const uint8_t *end);

/* A text through tokenizer 2 or 3 (sketch2.c): sketch_scan with its modes. */
const uint8_t *nd_sketch_scan2(nd_ctx *c, nd_roll *r, nd_word *w, const uint8_t *p, size_t len,
                               int kind, int tokenizer, unsigned simd);

static inline void scan_put(nd_scan *c, uint32_t cp) { /* MODE_TEXT is nd_normalize's */
    (void)c;
    (void)cp;
}

/* The scanner's shingles are gathered ND_HBUF at a time, then go to the set. */
static inline void scan_emit(nd_scan *c, nd_roll *r, uint64_t h, int64_t s, int64_t e,
                             unsigned f) {
    (void)s;
    (void)e;
    (void)f;
    r->hbuf[r->nh++] = h;
    if (ND_UNLIKELY(r->nh == ND_HBUF)) {
        nd_flush_shingles((nd_ctx *)c, r->hbuf, ND_HBUF);
        r->nh = 0;
    }
}

#if ND_X86
/* The AVX2 word scanner of the including file's tokenizer (defined there). */
__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *sketch_avx2(nd_scan *c,
                                                                          nd_roll *r,
                                                                          nd_word *w,
                                                                          const uint8_t *p,
                                                                          const uint8_t *end);
#if ND_SCAN_V2
/* tokenizer 3's (sketch2.c) */
__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *sketch_avx2_v3(nd_scan *c,
                                                                             nd_roll *r,
                                                                             nd_word *w,
                                                                             const uint8_t *p,
                                                                             const uint8_t *end);
#endif
#endif

/* One text through the scanner; mode is a constant at each call. NULL on
 * invalid UTF-8. */
__attribute__((always_inline)) static inline const uint8_t *sketch_scan(nd_ctx *c, nd_roll *r,
                                                                        nd_word *w,
                                                                        const uint8_t *p,
                                                                        size_t len, int mode,
                                                                        unsigned simd) {
    if (MODE_KIND(mode) == MODE_CHAR) return scan_scalar(&c->scan, r, w, mode, p, p + len, p + len);
    const uint8_t *q;
#if ND_X86
    if (simd & ND_SIMD_AVX2)
#if ND_SCAN_V2
        q = MODE_IS_V3(mode) ? sketch_avx2_v3(&c->scan, r, w, p, p + len)
                             : sketch_avx2(&c->scan, r, w, p, p + len);
#else
        q = sketch_avx2(&c->scan, r, w, p, p + len);
#endif
    else
#else
    (void)simd;
#endif
        q = scan_scalar(&c->scan, r, w, mode, p, p + len, p + len);
    if (q != NULL && w->in_word) word_end(&c->scan, r, w, mode);
    return q;
}

#endif
