/*
 * Characters, an internal header: strict UTF-8 decoding and encoding, and the
 * folding of one code point (case fold + alnum test, from the two-stage tables
 * gen_unicode.py makes; the tables nd_uc2_* of tokenizers 2 to 4 fold more,
 * see there).
 * The scanner (scan.h) and nd_normalize use it.
 */
#ifndef NEARDUP_FOLD_H
#define NEARDUP_FOLD_H

#include "internal.h"
#include "unicode_tables.h"

/* ASCII: folded byte if alnum, else 0 */
static const uint8_t nd_ascii_fold[128] = {
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,   0,
    '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 0,   0,   0,   0,   0,   0,
    0,   'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o',
    'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', 0,   0,   0,   0,   0,
    0,   'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o',
    'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', 0,   0,   0,   0,   0,
};

/* Decode one non-ASCII sequence at p (p < end, *p >= 0x80). Returns the
 * number of bytes consumed and the code point in *cp, or 0 if invalid. */
static inline size_t utf8_decode(const uint8_t *p, const uint8_t *end, uint32_t *cp) {
    uint8_t b0 = p[0];
    size_t avail = (size_t)(end - p);
    if (b0 < 0xC2) return 0; /* continuation byte or overlong 2-byte lead */
    if (b0 < 0xE0) {
        if (avail < 2 || (p[1] & 0xC0) != 0x80) return 0;
        *cp = ((uint32_t)(b0 & 0x1F) << 6) | (p[1] & 0x3F);
        return 2;
    }
    if (b0 < 0xF0) {
        if (avail < 3) return 0;
        uint8_t b1 = p[1];
        uint8_t lo = 0x80, hi = 0xBF;
        if (b0 == 0xE0) lo = 0xA0;      /* overlong */
        else if (b0 == 0xED) hi = 0x9F; /* surrogates */
        if (b1 < lo || b1 > hi || (p[2] & 0xC0) != 0x80) return 0;
        *cp = ((uint32_t)(b0 & 0x0F) << 12) | ((uint32_t)(b1 & 0x3F) << 6) | (p[2] & 0x3F);
        return 3;
    }
    if (b0 < 0xF5) {
        if (avail < 4) return 0;
        uint8_t b1 = p[1];
        uint8_t lo = 0x80, hi = 0xBF;
        if (b0 == 0xF0) lo = 0x90;      /* overlong */
        else if (b0 == 0xF4) hi = 0x8F; /* > U+10FFFF */
        if (b1 < lo || b1 > hi || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        *cp = ((uint32_t)(b0 & 0x07) << 18) | ((uint32_t)(b1 & 0x3F) << 12) |
              ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
        return 4;
    }
    return 0;
}

static inline const nd_uc_rec *uc_lookup(uint32_t cp) {
    uint32_t block = nd_uc_stage1[cp >> ND_UC_SHIFT];
    return &nd_uc_records[nd_uc_stage2[(block << ND_UC_SHIFT) | (cp & ((1u << ND_UC_SHIFT) - 1))]];
}

static inline const nd_uc2_rec *uc2_lookup(uint32_t cp) {
    uint32_t block = nd_uc2_stage1[cp >> ND_UC2_SHIFT];
    return &nd_uc2_records[nd_uc2_stage2[(block << ND_UC2_SHIFT) |
                                         (cp & ((1u << ND_UC2_SHIFT) - 1))]];
}

/* Tokenizer 3: its own stage 1 over tokenizer 2's records and blocks. */
static inline const nd_uc2_rec *uc3_lookup(uint32_t cp) {
    uint32_t block = nd_uc3_stage1[cp >> ND_UC2_SHIFT];
    return &nd_uc2_records[nd_uc2_stage2[(block << ND_UC2_SHIFT) |
                                         (cp & ((1u << ND_UC2_SHIFT) - 1))]];
}

/* Tokenizer 4: tokenizer 3 with more look-alikes, its own stage 1 again. */
static inline const nd_uc2_rec *uc4_lookup(uint32_t cp) {
    uint32_t block = nd_uc4_stage1[cp >> ND_UC2_SHIFT];
    return &nd_uc2_records[nd_uc2_stage2[(block << ND_UC2_SHIFT) |
                                         (cp & ((1u << ND_UC2_SHIFT) - 1))]];
}

_Static_assert(ND_UC2_COMPAT == ND_FOLD_COMPAT && ND_UC2_CONFUSABLE == ND_FOLD_CONFUSABLE &&
                   ND_UC2_INVISIBLE == ND_FOLD_INVISIBLE && ND_UC2_HYPHEN_JOIN == ND_FOLD_HYPHEN,
               "gen_unicode.py and neardup.h disagree on the ND_FOLD_* flags");
/* tokenizer 3's record bits the scanner turns into ND_FOLD_CONFUSABLE: above every ND_FOLD_* */
_Static_assert(((ND_UC3_CONF | ND_UC3_LATIN) & 0x3Fu) == 0, "tokenizer 3's bits overlap");

static inline size_t utf8_encode(uint32_t cp, uint8_t *out) {
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

#endif
