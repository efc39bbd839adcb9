/* Sketches of texts read with tokenizer 2 or 3: their scan, apart from
 * tokenizer 1's (sketch.h says why); the rest of the sketch is sketch.c's.
 * Tokenizer 3 is tokenizer 2's scanner on its own table (MODE_V3), and reads
 * plain ASCII alike too, so all that is said here of 2 holds for 3.
 *
 * Plain ASCII reads the same with both tokenizers but for a hyphen that may
 * hold a word (block_scalar), and gives the same shingle hashes: so runs of
 * such 64-byte blocks go to tokenizer 1's AVX2 word loop in sketch.c. The same
 * loop compiled here ran at two thirds of its speed (GCC 12 allocates its
 * registers differently in this file; AMD EPYC, bench/kernel.py; the sketch
 * of tokenizer 2 went from 0.6x to 0.95x of tokenizer 1's). Only the rolling
 * window's form differs: tokenizer 1 keeps the last items and the window's
 * sum, tokenizer 2 (for its unspaced letters) the sums of all items so far;
 * roll_to_items and roll_to_sums convert, in O(16). K = 16 (a window the
 * 16-slot ring cannot convert) stays on tokenizer 2's own loop. */
#define ND_SCAN_V2 1
#include "sketch.h"

#if ND_X86
/* Tokenizer 2's roll (ring[i & 15] = P_i, S = P_n) into tokenizer 1's
 * (ring[(i - 1) & 15] = x_i for the last 15 items, S = the last K items' sum)
 * for K < 16. x_i = P_i - P_(i-1) * B; slots never written hold 0, and so do
 * the items before the first. */
static void roll_to_items(const nd_scan *c, nd_roll *r) {
    uint64_t n = r->n, P[16];
    for (unsigned j = 0; j < 16; j++) P[j] = r->ring[(n - 15 + j) & 15]; /* P_(n-15+j) */
    r->S = P[15] - P[15 - c->k] * c->bk;
    for (unsigned j = 1; j < 16; j++) /* item n-15+j, at slot (n-16+j) & 15 */
        r->ring[(n - 16 + j) & 15] = P[j] - P[j - 1] * ND_B;
}

/* Back: tokenizer 1's last 15 items into sums. A text of fewer than 16
 * items gets its exact sums (P_0 = 0, the slots before it 0); a longer one
 * sums from P_(n-15) = 0, which changes no window of at most 16 items, and
 * every such text has emitted a whole shingle (roll_finish reads S only if
 * not). */
static void roll_to_sums(const nd_scan *c, nd_roll *r) {
    uint64_t n = r->n, x[16];
    for (unsigned j = 1; j < 16; j++) x[j] = r->ring[(n - 16 + j) & 15]; /* item n-15+j */
    uint64_t P = 0;
    unsigned j0 = 1;
    if (n < 16) { /* items 1..n: j = 16 - n .. 15 */
        j0 = (unsigned)(16 - n);
        for (unsigned j = 0; j < j0; j++) r->ring[(n - 15 + j) & 15] = 0;
    } else {
        r->ring[(n - 15) & 15] = 0;
    }
    for (unsigned j = j0; j < 16; j++) {
        P = P * ND_B + x[j];
        r->ring[(n - 15 + j) & 15] = P;
    }
    r->S = P;
    if (n >= c->k) r->emitted = 1;
}

/* Bytes of the whole 64-byte blocks from p that tokenizer 1's loop may read
 * for tokenizer 2 (none if a word is on hold or flags wait, see block_scalar). */
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline size_t ascii_run(
    const nd_word *w, const uint8_t *p, const uint8_t *end, int mode) {
    const uint8_t *q = p;
    int in_word = w->in_word;
    while ((size_t)(end - q) >= 64) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)q);
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(q + 32));
        nd_word at = *w;
        at.in_word = in_word;
        if (block_scalar(x0, x1, q, &at, mode)) break;
        in_word = nd_ascii_fold[q[63]] != 0;
        q += 64;
    }
    return (size_t)(q - p);
}

/* mode: a constant at each of the two callers below */
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline const uint8_t *
sketch_avx2_mode(nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end,
                 int mode) {
    while ((size_t)(end - p) >= 64) {
        size_t run = c->k < 16 ? ascii_run(w, p, end, mode) : 0;
        if (run > 0) {
            roll_to_items(c, r);
            nd_sketch_ascii1((nd_ctx *)c, r, w, p, p + run);
            roll_to_sums(c, r);
            p += run;
            continue;
        }
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
        if (block_scalar(x0, x1, p, w, mode)) {
            p = scan_scalar_block(c, r, w, mode, p, p + 64, end);
            if (p == NULL) return NULL;
            continue;
        }
        words_block_avx2(c, r, w, p, mode); /* K = 16 */
        p += 64;
    }
    return scan_words_avx2(c, r, w, p, end, mode); /* the last partial block */
}

__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *sketch_avx2(
    nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end) {
    return sketch_avx2_mode(c, r, w, p, end, MODE_WORD | MODE_V2);
}

__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *sketch_avx2_v3(
    nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end) {
    return sketch_avx2_mode(c, r, w, p, end, MODE_WORD | MODE_V2 | MODE_V3);
}
#endif

const uint8_t *nd_sketch_scan2(nd_ctx *c, nd_roll *r, nd_word *w, const uint8_t *p, size_t len,
                               int kind, int tokenizer, unsigned simd) {
    if (tokenizer >= ND_TOKENIZER_3) { /* 4: the same scan on its own table (c->scan.v4) */
        if (kind == ND_SHINGLE_WORD)
            return sketch_scan(c, r, w, p, len, MODE_WORD | MODE_V2 | MODE_V3, simd);
        return sketch_scan(c, r, w, p, len, MODE_CHAR | MODE_V2 | MODE_V3, simd);
    }
    if (kind == ND_SHINGLE_WORD) return sketch_scan(c, r, w, p, len, MODE_WORD | MODE_V2, simd);
    return sketch_scan(c, r, w, p, len, MODE_CHAR | MODE_V2, simd);
}
