/* Sketches of texts read with tokenizer 2: its scan, apart from tokenizer 1's
 * (sketch.h says why); the rest of the sketch is sketch.c's. */
#define ND_SCAN_V2 1
#include "sketch.h"

#if ND_X86
__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *sketch_avx2(
    nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end) {
    return scan_words_avx2(c, r, w, p, end, MODE_WORD | MODE_V2);
}
#endif

const uint8_t *nd_sketch_scan2(nd_ctx *c, nd_roll *r, nd_word *w, const uint8_t *p, size_t len,
                               int kind, unsigned simd) {
    if (kind == ND_SHINGLE_WORD) return sketch_scan(c, r, w, p, len, MODE_WORD | MODE_V2, simd);
    return sketch_scan(c, r, w, p, len, MODE_CHAR | MODE_V2, simd);
}
