/*
 * Passage layouts kept in records (formats in neardup.h): packed from winnow
 * outputs (format 1), compacted to format 2 and expanded back.
 */
#include "internal.h"


/* The size of a format 1 layout with this head (UINT64_MAX if absurd). */
static uint64_t layout1_size(uint64_t a, uint64_t w, uint64_t o) {
    if (w >= ND_LAYOUT_WIDE) return UINT64_MAX;
    uint64_t word_size = w < 65536 ? 2 : 4;
    return ND_LAYOUT_HEAD + a * (4 + word_size) + (w + 1) / 2 + w + 4 * o;
}

ND_EXPORT int nd_layout_compact(const uint8_t *in, uint64_t in_len, uint8_t *out,
                                uint64_t out_cap, uint64_t *out_len) {
    if ((in == NULL && in_len) || out_len == NULL || (out == NULL && out_cap)) return ND_E_ARG;
    if (in_len < ND_LAYOUT_HEAD) return ND_E_DATA;
    uint32_t a = load_le32(in), w = load_le32(in + 4), o = load_le32(in + 8);
    if (layout1_size(a, w, o) != in_len) return ND_E_DATA;
    uint64_t word_size = w < 65536 ? 2 : 4;
    const uint8_t *hashes = in + ND_LAYOUT_HEAD, *words = hashes + 4ull * a;
    const uint8_t *nibbles = words + word_size * a, *spans = nibbles + (w + 1) / 2;
    /* anchor words as u8 steps when every step fits (they rise by at most a window) */
    int wide = 0;
    uint32_t prev = 0;
    for (uint32_t i = 0; i < a && !wide; i++) {
        uint32_t x = word_size == 2 ? (uint32_t)words[2 * i] | (uint32_t)words[2 * i + 1] << 8
                                    : load_le32(words + 4 * i);
        if (x < prev || x - prev > 255) wide = 1;
        prev = x;
    }
    uint64_t gaps = 0, escapes = 0;
    for (uint32_t i = 0; i < w; i++) {
        gaps += (spans[i] >> 4) != 1;
        escapes += (spans[i] >> 4 == 15) + ((spans[i] & 15u) == 15);
    }
    if (escapes != o) return ND_E_DATA;
    uint64_t need = ND_LAYOUT_HEAD + 4ull * a + (wide ? word_size * a : a) + (w + 1) / 2 +
                    (w + 1) / 2 + (w + 7) / 8 + (gaps + 1) / 2 + 4ull * o;
    if (need > out_cap) return ND_E_SPACE;
    memset(out, 0, need);
    store_le32(out, a);
    store_le32(out + 4, w | ND_LAYOUT_COMPACT | (wide ? ND_LAYOUT_WIDE : 0));
    store_le32(out + 8, o);
    uint8_t *p = out + ND_LAYOUT_HEAD;
    memcpy(p, hashes, 4ull * a);
    p += 4ull * a;
    if (wide) {
        memcpy(p, words, word_size * a);
        p += word_size * a;
    } else {
        prev = 0;
        for (uint32_t i = 0; i < a; i++) {
            uint32_t x = word_size == 2 ? (uint32_t)words[2 * i] | (uint32_t)words[2 * i + 1] << 8
                                        : load_le32(words + 4 * i);
            *p++ = (uint8_t)(x - prev);
            prev = x;
        }
    }
    memcpy(p, nibbles, (w + 1) / 2);
    p += (w + 1) / 2;
    uint8_t *lens = p, *bitmap = lens + (w + 1) / 2, *gap_nibbles = bitmap + (w + 7) / 8;
    uint64_t e = 0;
    for (uint32_t i = 0; i < w; i++) {
        unsigned gap = spans[i] >> 4, len = spans[i] & 15u;
        lens[i / 2] |= (uint8_t)(i % 2 ? len : len << 4);
        if (gap != 1) {
            bitmap[i / 8] |= (uint8_t)(1u << (i % 8));
            gap_nibbles[e / 2] |= (uint8_t)(e % 2 ? gap : gap << 4);
            e++;
        }
    }
    p = gap_nibbles + (gaps + 1) / 2;
    memcpy(p, spans + w, 4ull * o);
    *out_len = need;
    return ND_OK;
}

ND_EXPORT int nd_layout_expand(const uint8_t *in, uint64_t in_len, uint8_t *out,
                               uint64_t out_cap, uint64_t *out_len) {
    if ((in == NULL && in_len) || out_len == NULL || (out == NULL && out_cap)) return ND_E_ARG;
    if (in_len < ND_LAYOUT_HEAD) return ND_E_DATA;
    uint32_t a = load_le32(in), flagged = load_le32(in + 4), o = load_le32(in + 8);
    if (!(flagged & ND_LAYOUT_COMPACT)) return ND_E_DATA;
    int wide = (flagged & ND_LAYOUT_WIDE) != 0;
    uint32_t w = flagged & ~(ND_LAYOUT_COMPACT | ND_LAYOUT_WIDE);
    uint64_t word_size = w < 65536 ? 2 : 4;
    /* the fixed part first (every count is below 2^32, so no sum overflows) */
    uint64_t fixed = ND_LAYOUT_HEAD + 4ull * a + (wide ? word_size * a : a) + (w + 1) / 2 +
                     (w + 1) / 2 + (w + 7) / 8;
    if (fixed > in_len) return ND_E_DATA;
    const uint8_t *hashes = in + ND_LAYOUT_HEAD, *steps = hashes + 4ull * a;
    const uint8_t *nibbles = steps + (wide ? word_size * a : a);
    const uint8_t *lens = nibbles + (w + 1) / 2, *bitmap = lens + (w + 1) / 2;
    const uint8_t *gap_nibbles = bitmap + (w + 7) / 8;
    uint64_t gaps = 0;
    for (uint64_t i = 0; i < (w + 7) / 8; i++) gaps += (uint64_t)__builtin_popcount(bitmap[i]);
    if (w % 8 && (bitmap[w / 8] >> (w % 8))) return ND_E_DATA; /* bits past the last word */
    if (fixed + (gaps + 1) / 2 + 4ull * o != in_len) return ND_E_DATA;
    uint64_t size = layout1_size(a, w, o);
    if (size > out_cap) {
        *out_len = size;
        return ND_E_SPACE;
    }
    store_le32(out, a);
    store_le32(out + 4, w);
    store_le32(out + 8, o);
    uint8_t *p = out + ND_LAYOUT_HEAD;
    memcpy(p, hashes, 4ull * a);
    p += 4ull * a;
    if (wide) {
        memcpy(p, steps, word_size * a);
        p += word_size * a;
    } else {
        uint64_t x = 0;
        for (uint32_t i = 0; i < a; i++) {
            x += steps[i];
            if (word_size == 2) {
                if (x > 0xFFFF) return ND_E_DATA;
                p[0] = (uint8_t)x;
                p[1] = (uint8_t)(x >> 8);
                p += 2;
            } else {
                if (x > 0xFFFFFFFFull) return ND_E_DATA;
                store_le32(p, (uint32_t)x);
                p += 4;
            }
        }
    }
    memcpy(p, nibbles, (w + 1) / 2);
    p += (w + 1) / 2;
    uint64_t e = 0;
    for (uint32_t i = 0; i < w; i++) {
        unsigned len = i % 2 ? lens[i / 2] & 15u : lens[i / 2] >> 4;
        unsigned gap = 1;
        if (bitmap[i / 8] >> (i % 8) & 1u) {
            gap = e % 2 ? gap_nibbles[e / 2] & 15u : gap_nibbles[e / 2] >> 4;
            e++;
        }
        *p++ = (uint8_t)(gap << 4 | len);
    }
    /* every 15 (an escape) has its overflow value, and no value is left over */
    uint64_t escapes = 0;
    for (uint32_t i = 0; i < w; i++) {
        uint8_t b = out[size - 4ull * o - w + i];
        escapes += (b >> 4 == 15) + ((b & 15u) == 15);
    }
    if (escapes != o) return ND_E_DATA;
    memcpy(p, gap_nibbles + (gaps + 1) / 2, 4ull * o);
    *out_len = size;
    return ND_OK;
}

/* ------------------------------------------------------------------ */
/* Passage layouts packed from winnow outputs (format 1, see neardup.h) */

/* Whether a span's gap or length goes to the overflow list (its nibble 15): 15 or more,
 * or negative. A gap is negative where one code point folds into several words (U+00BD
 * into 1 and 2, Thai U+0E41 into two letters): they share its span, so the second starts
 * before the first ends; such a value is kept as its low 32 bits, read back signed. */
static inline int escaped(uint64_t value) {
    return (int64_t)value >= 15 || (int64_t)value < 0;
}

/* The first of n ascending starts that is >= value (numpy's searchsorted, side left). */
static uint64_t first_at_or_after(const int64_t *starts, uint64_t n, int64_t value) {
    uint64_t lo = 0, hi = n;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (starts[mid] < value) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Each anchor's word (the first word starting at or after it) at p: uint16, or uint32 in
 * texts of 65,536 words or more (formats 1 and 3 alike); the byte after the last. */
static uint8_t *store_anchor_words(uint8_t *p, const int64_t *a_starts, uint64_t na,
                                   const int64_t *w_starts, uint64_t nw) {
    int wide = nw >= 65536;
    for (uint64_t j = 0; j < na; j++) {
        uint64_t w = first_at_or_after(w_starts, nw, a_starts[j]);
        if (wide) {
            store_le32(p, (uint32_t)w);
            p += 4;
        } else {
            p[0] = (uint8_t)w;
            p[1] = (uint8_t)(w >> 8);
            p += 2;
        }
    }
    return p;
}

/* One text's layout into out (room for ND_LAYOUT_MAX bytes); the bytes written. */
static uint64_t layout_pack(const uint64_t *a_hashes, const int64_t *a_starts, uint64_t na,
                            const uint64_t *w_hashes, const int64_t *w_starts,
                            const int64_t *w_ends, uint64_t nw, uint8_t *out) {
    uint8_t *p = out + ND_LAYOUT_HEAD;
    for (uint64_t j = 0; j < na; j++, p += 4) store_le32(p, (uint32_t)a_hashes[j]);
    p = store_anchor_words(p, a_starts, na, w_starts, nw);
    for (uint64_t j = 0; j < nw; j += 2) {
        unsigned hi = (unsigned)(w_hashes[j] & 15);
        unsigned lo = j + 1 < nw ? (unsigned)(w_hashes[j + 1] & 15) : 0;
        *p++ = (uint8_t)(hi << 4 | lo);
    }
    /* a byte per word (gap before it, its length: 4 bits each, 15 = see the
     * overflow list), then the overflow list (uint32 each, in word order, gap
     * first); arithmetic in uint64 so that any input wraps as numpy's int64 does */
    uint8_t *overflow = p + nw;
    uint32_t overflows = 0;
    uint64_t prev_end = 0;
    for (uint64_t j = 0; j < nw; j++) {
        uint64_t gap = (uint64_t)w_starts[j] - prev_end;
        uint64_t len = (uint64_t)w_ends[j] - (uint64_t)w_starts[j];
        int big_gap = escaped(gap), big_len = escaped(len);
        if (big_gap) {
            store_le32(overflow, (uint32_t)gap);
            overflow += 4;
            overflows++;
        }
        if (big_len) {
            store_le32(overflow, (uint32_t)len);
            overflow += 4;
            overflows++;
        }
        *p++ = (uint8_t)(((big_gap ? 15 : gap) << 4) | (big_len ? 15 : len));
        prev_end = (uint64_t)w_ends[j];
    }
    store_le32(out, (uint32_t)na);
    store_le32(out + 4, (uint32_t)nw);
    store_le32(out + 8, overflows);
    return (uint64_t)(overflow - out);
}

/* Whether a batch packer's arrays are consistent: n texts' anchor and word ranges, each
 * within its array and in order, at most UINT32_MAX anchors and max_words words a text. */
static int batch_ok(const uint64_t *anchor_hashes, const int64_t *anchor_starts,
                    uint64_t anchor_count, const uint64_t *anchor_offsets,
                    const uint64_t *word_hashes, const int64_t *word_starts,
                    const int64_t *word_ends, uint64_t word_count, const uint64_t *word_offsets,
                    size_t n, uint64_t max_words) {
    if (anchor_offsets == NULL || word_offsets == NULL) return 0;
    if ((anchor_count && (anchor_hashes == NULL || anchor_starts == NULL)) ||
        (word_count && (word_hashes == NULL || word_starts == NULL || word_ends == NULL)))
        return 0;
    if (anchor_offsets[n] > anchor_count || word_offsets[n] > word_count) return 0;
    for (size_t i = 0; i < n; i++) {
        if (anchor_offsets[i + 1] < anchor_offsets[i] || word_offsets[i + 1] < word_offsets[i])
            return 0;
        if (anchor_offsets[i + 1] - anchor_offsets[i] > UINT32_MAX ||
            word_offsets[i + 1] - word_offsets[i] > max_words)
            return 0;
    }
    return 1;
}

ND_EXPORT int nd_layout_pack_batch(const uint64_t *anchor_hashes, const int64_t *anchor_starts,
                                   uint64_t anchor_count, const uint64_t *anchor_offsets,
                                   const uint64_t *word_hashes, const int64_t *word_starts,
                                   const int64_t *word_ends, uint64_t word_count,
                                   const uint64_t *word_offsets, size_t n, uint8_t *out,
                                   uint64_t out_cap, uint64_t *out_offsets) {
    if (out_offsets == NULL) return ND_E_ARG;
    out_offsets[0] = 0;
    if (n == 0) return ND_OK;
    if (!batch_ok(anchor_hashes, anchor_starts, anchor_count, anchor_offsets, word_hashes,
                  word_starts, word_ends, word_count, word_offsets, n, UINT32_MAX))
        return ND_E_ARG;
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a0 = anchor_offsets[i], na = anchor_offsets[i + 1] - a0;
        uint64_t w0 = word_offsets[i], nw = word_offsets[i + 1] - w0;
        if (ND_LAYOUT_MAX(na, nw) > out_cap - at || out == NULL) return ND_E_SPACE;
        at += layout_pack(na ? anchor_hashes + a0 : NULL, na ? anchor_starts + a0 : NULL, na,
                          nw ? word_hashes + w0 : NULL, nw ? word_starts + w0 : NULL,
                          nw ? word_ends + w0 : NULL, nw, out + at);
        out_offsets[i + 1] = at;
    }
    return ND_OK;
}


/* ------------------------------------------------------------------ */
/* Passage layouts packed from winnow outputs (format 3, see neardup.h) */

/* One text's format 3 layout into out (room for ND_LAYOUT3_MAX bytes); the bytes written.
 * Arithmetic on spans in uint64 and comparisons on its int64 reading, as numpy's int64
 * wraps and compares, so any input packs as Layout.pack packs it. */
static uint64_t layout3_pack(const uint64_t *a_hashes, const int64_t *a_starts, uint64_t na,
                             const uint64_t *w_hashes, const int64_t *w_starts,
                             const int64_t *w_ends, uint64_t nw, unsigned bits, uint8_t *out) {
    uint8_t *p = out + ND_LAYOUT_HEAD + 4;
    for (uint64_t j = 0; j < na; j++, p += 4) store_le32(p, (uint32_t)a_hashes[j]);
    /* anchor words as one-byte steps when every step is in [0, 256) */
    unsigned kind = bits | ND_LAYOUT_STEPS;
    uint64_t prev = 0;
    for (uint64_t j = 0; j < na; j++) {
        uint64_t w = first_at_or_after(w_starts, nw, a_starts[j]);
        if (w < prev || w - prev > 255) {
            kind = bits;
            break;
        }
        p[j] = (uint8_t)(w - prev);
        prev = w;
    }
    if (kind & ND_LAYOUT_STEPS) {
        p += na;
    } else {
        p = store_anchor_words(p, a_starts, na, w_starts, nw);
    }
    /* word hashes: the low `bits` bits of each, least significant first, little-endian */
    uint64_t mask = (1u << bits) - 1;
    if (bits == 8) {
        for (uint64_t j = 0; j < nw; j++) p[j] = (uint8_t)w_hashes[j];
        p += nw;
    } else if (bits == 16) {
        for (uint64_t j = 0; j < nw; j++, p += 2) {
            p[0] = (uint8_t)w_hashes[j];
            p[1] = (uint8_t)(w_hashes[j] >> 8);
        }
    } else {
        uint64_t acc = 0;
        unsigned held = 0;
        for (uint64_t j = 0; j < nw; j++) {
            acc |= (w_hashes[j] & mask) << held;
            held += bits;
            while (held >= 8) {
                *p++ = (uint8_t)acc;
                acc >>= 8;
                held -= 8;
            }
        }
        if (held) *p++ = (uint8_t)acc;
    }
    /* the spans: count first (the gap overflow values come before the length ones) */
    uint64_t odd = 0, big_gaps = 0, big_lens = 0, prev_end = 0;
    for (uint64_t j = 0; j < nw; j++) {
        uint64_t gap = (uint64_t)w_starts[j] - prev_end;
        uint64_t len = (uint64_t)w_ends[j] - (uint64_t)w_starts[j];
        if (gap != 1) {
            odd++;
            big_gaps += escaped(gap);
        }
        big_lens += escaped(len);
        prev_end = (uint64_t)w_ends[j];
    }
    uint8_t *lens = p, *bitmap = lens + (nw + 1) / 2, *gap_nibbles = bitmap + (nw + 7) / 8;
    uint8_t *gap_values = gap_nibbles + (odd + 1) / 2, *len_values = gap_values + 4 * big_gaps;
    memset(lens, 0, (uint64_t)(gap_values - lens));
    uint64_t e = 0;
    prev_end = 0;
    for (uint64_t j = 0; j < nw; j++) {
        uint64_t gap = (uint64_t)w_starts[j] - prev_end;
        uint64_t len = (uint64_t)w_ends[j] - (uint64_t)w_starts[j];
        unsigned len4 = (unsigned)len & 15u;
        if (escaped(len)) {
            len4 = 15;
            store_le32(len_values, (uint32_t)len);
            len_values += 4;
        }
        lens[j / 2] |= (uint8_t)(j % 2 ? len4 : len4 << 4);
        if (gap != 1) {
            unsigned gap4 = (unsigned)gap & 15u;
            if (escaped(gap)) {
                gap4 = 15;
                store_le32(gap_values, (uint32_t)gap);
                gap_values += 4;
            }
            bitmap[j / 8] |= (uint8_t)(1u << (j % 8));
            gap_nibbles[e / 2] |= (uint8_t)(e % 2 ? gap4 : gap4 << 4);
            e++;
        }
        prev_end = (uint64_t)w_ends[j];
    }
    store_le32(out, (uint32_t)na);
    store_le32(out + 4, (uint32_t)nw | ND_LAYOUT_HASHED);
    store_le32(out + 8, (uint32_t)(big_gaps + big_lens));
    store_le32(out + ND_LAYOUT_HEAD, kind);
    return (uint64_t)(len_values - out);
}

ND_EXPORT int nd_layout_pack3_batch(const uint64_t *anchor_hashes, const int64_t *anchor_starts,
                                    uint64_t anchor_count, const uint64_t *anchor_offsets,
                                    const uint64_t *word_hashes, const int64_t *word_starts,
                                    const int64_t *word_ends, uint64_t word_count,
                                    const uint64_t *word_offsets, size_t n, unsigned bits,
                                    uint8_t *out, uint64_t out_cap, uint64_t *out_offsets) {
    if (out_offsets == NULL) return ND_E_ARG;
    out_offsets[0] = 0;
    if (bits < ND_LAYOUT_BITS_MIN || bits > ND_LAYOUT_BITS_MAX) return ND_E_ARG;
    if (n == 0) return ND_OK;
    /* the word count shares its u32 with the format flags */
    if (!batch_ok(anchor_hashes, anchor_starts, anchor_count, anchor_offsets, word_hashes,
                  word_starts, word_ends, word_count, word_offsets, n, ND_LAYOUT_HASHED - 1))
        return ND_E_ARG;
    uint64_t at = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t a0 = anchor_offsets[i], na = anchor_offsets[i + 1] - a0;
        uint64_t w0 = word_offsets[i], nw = word_offsets[i + 1] - w0;
        if (ND_LAYOUT3_MAX(na, nw) > out_cap - at || out == NULL) return ND_E_SPACE;
        at += layout3_pack(na ? anchor_hashes + a0 : NULL, na ? anchor_starts + a0 : NULL, na,
                           nw ? word_hashes + w0 : NULL, nw ? word_starts + w0 : NULL,
                           nw ? word_ends + w0 : NULL, nw, bits, out + at);
        out_offsets[i + 1] = at;
    }
    return ND_OK;
}
