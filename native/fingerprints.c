/*
 * Fingerprints: Jaccard estimates of bottom-N fingerprints (a merge with an
 * SSE4.2 pcmpestrm block skip in a target region behind the run-time CPU
 * check, and its scalar twin, which defines the result), and their Elias-Fano
 * compression, decoded inside the Jaccard call for stored candidates.
 */
#include "internal.h"


/* number of elements of sorted a[0..n) that are <= tau */
static inline uint32_t count_le(const uint32_t *a, uint32_t n, uint32_t tau) {
    /* branch-free binary search: the outcome of each step is a coin toss */
    if (n == 0) return 0;
    const uint32_t *base = a;
    uint32_t len = n;
    while (len > 1) {
        uint32_t half = len / 2;
        base += (size_t)(base[half - 1] <= tau) * half; /* arithmetic, not a branch */
        len -= half;
    }
    return (uint32_t)(base - a) + (base[0] <= tau);
}

/* count_le for hash values (about uniform): guess the position from the
 * value, then search a small window around it (falls back to the whole array
 * when the answer is outside the window). Same result as count_le. */
static inline uint32_t count_le_uniform(const uint32_t *a, uint32_t n, uint32_t tau) {
    if (n <= 64) return count_le(a, n, tau);
    uint32_t last = a[n - 1];
    if (tau >= last) return n;
    uint32_t g = (uint32_t)((double)tau / ((double)last + 1.0) * (double)n);
    uint32_t lo = g > 24 ? g - 24 : 0;
    uint32_t hi = g + 24 < n ? g + 24 : n;
    if ((lo == 0 || a[lo - 1] <= tau) && (hi == n || a[hi] > tau))
        return lo + count_le(a + lo, hi - lo, tau);
    return count_le(a, n, tau);
}

/* The counts the estimate is made of: na, nb are cut to the values <= tau. */
static inline void jaccard_bounds(const uint32_t *a, uint32_t *na, const uint32_t *b, uint32_t *nb,
                                  uint32_t fp_size) {
    int a_inc = *na >= fp_size, b_inc = *nb >= fp_size;
    if (!a_inc && !b_inc) return;
    uint32_t tau;
    if (a_inc && b_inc)
        tau = a[*na - 1] < b[*nb - 1] ? a[*na - 1] : b[*nb - 1];
    else
        tau = a_inc ? a[*na - 1] : b[*nb - 1];
    if (*na && a[*na - 1] > tau) *na = count_le_uniform(a, *na, tau);
    if (*nb && b[*nb - 1] > tau) *nb = count_le_uniform(b, *nb, tau);
}

static inline double jaccard_ratio(uint32_t inter, uint32_t na, uint32_t nb) {
    uint32_t uni = na + nb - inter;
    return uni == 0 ? 0.0 : (double)inter / (double)uni;
}

/* Smallest intersection whose ratio reaches threshold (computed with the
 * same double arithmetic as the result), or UINT32_MAX if none can. */
static uint32_t min_intersection(uint32_t na, uint32_t nb, double threshold) {
    uint32_t most = na < nb ? na : nb;
    if (!(threshold > 0.0)) return 0;
    if (jaccard_ratio(most, na, nb) < threshold) return UINT32_MAX;
    double guess = threshold * (double)(na + nb) / (1.0 + threshold);
    uint32_t c = guess <= 0.0 ? 0 : (guess >= (double)most ? most : (uint32_t)guess);
    while (c > 0 && jaccard_ratio(c - 1, na, nb) >= threshold) c--;
    while (c < most && jaccard_ratio(c, na, nb) < threshold) c++;
    return c;
}

#define MEMO_SLOTS 1024
typedef struct {
    uint64_t key; /* na << 32 | nb; all ones = empty (na, nb < 2^32 - 1 as lengths) */
    uint32_t need;
} nd_memo;

/* Scalar merge from (i, j): intersection count, or UINT32_MAX once
 * inter + min(remaining) < need (the threshold is out of reach). */
static inline uint32_t merge_scalar(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
                                    uint32_t i, uint32_t j, uint32_t inter, uint32_t need) {
    for (;;) {
        uint32_t ra = na - i, rb = nb - j;
        uint32_t m = ra < rb ? ra : rb;
        if (inter + m < need) return UINT32_MAX;
        if (m == 0) return inter;
        uint32_t steps = m < 16 ? m : 16;
        for (uint32_t s = 0; s < steps; s++) {
            uint32_t x = a[i], y = b[j];
            inter += x == y;
            i += x <= y;
            j += y <= x;
        }
    }
}

#if ND_X86
/* SSE4.2: blocks of 8; pcmpestrm on the upper 16-bit halves says whether the
 * two blocks can share a value at all; only then the exact 8x8 compare. */
__attribute__((target("sse4.2,popcnt"))) static uint32_t merge_sse42(const uint32_t *a, uint32_t na,
                                                                     const uint32_t *b,
                                                                     uint32_t nb, uint32_t need) {
    uint32_t i = 0, j = 0, inter = 0;
    while (i + 8 <= na && j + 8 <= nb) {
        __m128i a0 = _mm_loadu_si128((const __m128i *)(const void *)(a + i));
        __m128i a1 = _mm_loadu_si128((const __m128i *)(const void *)(a + i + 4));
        __m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)(b + j));
        __m128i b1 = _mm_loadu_si128((const __m128i *)(const void *)(b + j + 4));
        __m128i ah = _mm_packus_epi32(_mm_srli_epi32(a0, 16), _mm_srli_epi32(a1, 16));
        __m128i bh = _mm_packus_epi32(_mm_srli_epi32(b0, 16), _mm_srli_epi32(b1, 16));
        if (_mm_cmpestrc(ah, 8, bh, 8, _SIDD_UWORD_OPS | _SIDD_CMP_EQUAL_ANY)) {
            __m128i m0 = _mm_or_si128(_mm_cmpeq_epi32(a0, b0), _mm_cmpeq_epi32(a0, b1));
            __m128i m1 = _mm_or_si128(_mm_cmpeq_epi32(a1, b0), _mm_cmpeq_epi32(a1, b1));
            for (int r = 0; r < 3; r++) {
                b0 = _mm_shuffle_epi32(b0, _MM_SHUFFLE(0, 3, 2, 1));
                b1 = _mm_shuffle_epi32(b1, _MM_SHUFFLE(0, 3, 2, 1));
                m0 = _mm_or_si128(m0, _mm_or_si128(_mm_cmpeq_epi32(a0, b0), _mm_cmpeq_epi32(a0, b1)));
                m1 = _mm_or_si128(m1, _mm_or_si128(_mm_cmpeq_epi32(a1, b0), _mm_cmpeq_epi32(a1, b1)));
            }
            inter += (uint32_t)__builtin_popcount(
                (unsigned)_mm_movemask_ps(_mm_castsi128_ps(m0)) |
                ((unsigned)_mm_movemask_ps(_mm_castsi128_ps(m1)) << 4));
        }
        uint32_t amax = a[i + 7], bmax = b[j + 7];
        i += (uint32_t)(amax <= bmax) << 3; /* arithmetic, not a branch */
        j += (uint32_t)(bmax <= amax) << 3;
        uint32_t ra = na - i, rb = nb - j;
        if (inter + (ra < rb ? ra : rb) < need) return UINT32_MAX;
    }
    return merge_scalar(a, na, b, nb, i, j, inter, need);
}
#endif

static inline uint32_t intersect(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
                                 uint32_t need, unsigned simd) {
#if ND_X86
    if (simd & ND_SIMD_SSE42) return merge_sse42(a, na, b, nb, need);
#else
    (void)simd;
#endif
    return merge_scalar(a, na, b, nb, 0, 0, 0, need);
}

/* One candidate's estimate (see nd_jaccard_many): the bounds, the smallest
 * intersection that reaches the threshold, the merge. memo may be NULL. */
static double jaccard_one(const uint32_t *query, uint32_t nq, const uint32_t *b, uint32_t nb,
                          uint32_t fp_size, double threshold, nd_memo *memo, unsigned simd) {
    uint32_t na = nq;
    jaccard_bounds(query, &na, b, &nb, fp_size);
    uint32_t need;
    if (memo != NULL) {
        uint64_t key = (uint64_t)na << 32 | nb;
        nd_memo *e = &memo[(na * 37u + nb) & (MEMO_SLOTS - 1)];
        if (e->key != key) {
            e->key = key;
            e->need = min_intersection(na, nb, threshold);
        }
        need = e->need;
    } else {
        need = min_intersection(na, nb, threshold);
    }
    double r = 0.0;
    if (need != UINT32_MAX) {
        uint32_t inter = intersect(query, na, b, nb, need, simd);
        if (inter != UINT32_MAX) {
            r = jaccard_ratio(inter, na, nb);
            if (r < threshold) r = 0.0;
        }
    }
    return r;
}

/* The smallest intersection that reaches the threshold depends only on
 * (na, nb), which repeat a lot: remember it in a small direct-mapped table
 * (NULL without a threshold, or if it cannot be allocated: then computed each
 * time, with the same result). */
static nd_memo *memo_new(double threshold) {
    nd_memo *memo = threshold > 0.0 ? (nd_memo *)malloc(MEMO_SLOTS * sizeof *memo) : NULL;
    if (memo != NULL) memset(memo, 0xFF, MEMO_SLOTS * sizeof *memo);
    return memo;
}

/* Whether a query fingerprint is sorted and distinct, as the merges assume (its SIMD and
 * scalar intersections disagree on other input); one pass, cheaper here than a caller's. */
static int query_ok(const uint32_t *query, uint32_t nq) {
    if (nq > 0 && query == NULL) return 0;
    for (uint32_t i = 1; i < nq; i++)
        if (query[i] <= query[i - 1]) return 0;
    return 1;
}

ND_EXPORT int nd_jaccard_many(const uint32_t *query, uint32_t nq, const uint32_t *values,
                              const uint64_t *offsets, size_t n, uint32_t fp_size,
                              double threshold, unsigned flags, double *out) {
    if (fp_size == 0 || !query_ok(query, nq) || threshold != threshold) return ND_E_ARG;
    if (n == 0) return ND_OK;
    if (offsets == NULL || out == NULL) return ND_E_ARG;
    for (size_t i = 0; i < n; i++)
        if (offsets[i + 1] < offsets[i] || offsets[i + 1] - offsets[i] > UINT32_MAX) return ND_E_ARG;
    if (values == NULL && offsets[n] != offsets[0]) return ND_E_ARG;
    unsigned simd = nd_active(flags);
    nd_memo *memo = memo_new(threshold);
    for (size_t i = 0; i < n; i++) {
        const uint32_t *b = values ? values + offsets[i] : NULL;
        out[i] = jaccard_one(query, nq, b, (uint32_t)(offsets[i + 1] - offsets[i]), fp_size,
                             threshold, memo, simd);
    }
    free(memo);
    return ND_OK;
}

/* Compressed fingerprints (Elias-Fano, see neardup.h) ------------------ */
/*
 * Scalar only: decoding 256 values is a few hundred cycles next to the merge
 * that follows, so a SIMD path would buy little and cost a second twin to test.
 */

/* The L of a non-empty array whose largest value is last. */
static inline unsigned ef_low_bits(uint32_t count, uint32_t last) {
    uint64_t universe = (uint64_t)last + 1;
    unsigned l = 0;
    while (l < 32 && ((uint64_t)count << (l + 1)) <= universe) l++;
    return l;
}

/* Whether every value's low ND_FP_SHIFT bits are 0, as a shifted encoding needs. */
static inline int ef_low_clear(const uint32_t *v, uint32_t count) {
    uint32_t low = 0;
    for (uint32_t i = 0; i < count; i++) low |= v[i];
    return (low & ((1u << ND_FP_SHIFT) - 1)) == 0;
}

static inline uint64_t ef_size(uint32_t count, unsigned l, uint32_t last) {
    if (count == 0) return 0;
    return 1 + ((uint64_t)count * l + 7) / 8 + ((((uint64_t)last >> l) + count) + 7) / 8;
}

/* Bytes the encoding of a non-empty array takes (shift: ND_FP_SHIFTED or 0). */
static inline uint64_t ef_size_of(uint32_t count, uint32_t last, unsigned shift) {
    uint32_t top = shift ? last >> ND_FP_SHIFT : last;
    return ef_size(count, ef_low_bits(count, top), top);
}

static uint64_t ef_encode(const uint32_t *v, uint32_t count, unsigned shift, uint8_t *out) {
    if (count == 0) return 0;
    unsigned s = shift ? ND_FP_SHIFT : 0;
    uint32_t last = v[count - 1] >> s;
    unsigned l = ef_low_bits(count, last);
    uint64_t total = ef_size(count, l, last);
    memset(out, 0, total);
    out[0] = (uint8_t)(l | shift);
    uint8_t *low = out + 1;
    uint8_t *high = low + ((uint64_t)count * l + 7) / 8;
    uint64_t mask = l == 32 ? 0xFFFFFFFFull : ((1ull << l) - 1);
    for (uint32_t i = 0; i < count; i++) {
        uint32_t x = v[i] >> s;
        uint64_t bits = x & mask, pos = (uint64_t)i * l;
        for (unsigned done = 0; done < l;) { /* byte by byte: never past the section */
            unsigned shift_in = (unsigned)(pos & 7), take = 8 - shift_in;
            if (take > l - done) take = l - done;
            low[pos >> 3] |= (uint8_t)(((bits >> done) & ((1u << take) - 1)) << shift_in);
            pos += take;
            done += take;
        }
        uint64_t hp = ((uint64_t)x >> l) + i;
        high[hp >> 3] |= (uint8_t)(1u << (hp & 7));
    }
    return total;
}

/* Decodes one encoding of len bytes into count values; ND_OK or ND_E_DATA. */
static int ef_decode(const uint8_t *p, uint64_t len, uint32_t count, uint32_t *out) {
    if (count == 0) return len == 0 ? ND_OK : ND_E_DATA;
    if (count > ND_MAX_FP_SIZE || len < 2) return ND_E_DATA;
    unsigned shifted = p[0] & ND_FP_SHIFTED, l = p[0] & ~ND_FP_SHIFTED;
    if (l > 32) return ND_E_DATA;
    uint64_t low_len = ((uint64_t)count * l + 7) / 8;
    if (len < 1 + low_len + 1) return ND_E_DATA;
    const uint8_t *low = p + 1, *high = low + low_len;
    unsigned used = (unsigned)(((uint64_t)count * l) & 7); /* bits of the last low byte */
    if (used && (low[low_len - 1] >> used) != 0) return ND_E_DATA; /* padding must be 0 */
    uint64_t high_len = len - 1 - low_len;
    uint64_t mask = l == 32 ? 0xFFFFFFFFull : ((1ull << l) - 1);
    uint32_t i = 0;
    /* the high bits a word at a time: the loop over a word's set bits is the
     * only unpredictable branch, once per word rather than once per byte */
    uint64_t top = 0xFFFFFFFFull >> l; /* the largest high part a uint32 allows */
    for (uint64_t at = 0; at < high_len; at += 8) {
        uint64_t word = 0;
        if (at + 8 <= high_len) {
            word = load_le64(high + at);
        } else {
            for (uint64_t k = at; k < high_len; k++) word |= (uint64_t)high[k] << (8 * (k - at));
        }
        while (word) {
            if (i == count) return ND_E_DATA; /* more values than count */
            uint64_t hi = at * 8 + (unsigned)__builtin_ctzll(word) - i;
            word &= word - 1;
            if (hi > top) return ND_E_DATA;
            out[i++] = (uint32_t)(hi << l);
        }
    }
    if (i != count) return ND_E_DATA;
    /* then the low bits: one unaligned load each, but near the end of the data */
    uint32_t fast = 0;
    if (len >= 9) {
        uint64_t most = ((len - 9) * 8) / (l ? l : 1) + 1; /* values whose load fits */
        fast = l == 0 ? count : (uint32_t)(most < count ? most : count);
    }
    for (uint32_t j = 0; j < fast && l; j++) {
        uint64_t pos = (uint64_t)j * l;
        out[j] |= (uint32_t)((load_le64(low + (pos >> 3)) >> (pos & 7)) & mask);
    }
    for (uint32_t j = fast; j < count && l; j++) {
        uint64_t lo = 0, pos = (uint64_t)j * l;
        for (unsigned done = 0; done < l;) {
            unsigned shift = (unsigned)(pos & 7), take = 8 - shift;
            if (take > l - done) take = l - done;
            lo |= (uint64_t)((low[pos >> 3] >> shift) & ((1u << take) - 1)) << done;
            pos += take;
            done += take;
        }
        out[j] |= (uint32_t)lo;
    }
    for (uint32_t j = 1; j < count; j++)
        if (out[j] <= out[j - 1]) return ND_E_DATA;
    /* exactly what the encoder writes: count values, the last in the last byte
     * and the L it would choose (so every array has one encoding) */
    if ((high[high_len - 1] == 0) || ef_low_bits(count, out[count - 1]) != l ||
        ef_size(count, l, out[count - 1]) != len)
        return ND_E_DATA;
    if (shifted) {
        /* the values were stored >> 8: none may lose a bit going back */
        if (out[count - 1] > (0xFFFFFFFFu >> ND_FP_SHIFT)) return ND_E_DATA;
        for (uint32_t j = 0; j < count; j++) out[j] <<= ND_FP_SHIFT;
    }
    return ND_OK;
}

ND_EXPORT int nd_fp_encode_batch(const uint32_t *values, const uint64_t *offsets, size_t n,
                                 unsigned flags, uint8_t *out, uint64_t out_cap,
                                 uint64_t *out_offsets) {
    if (n == 0) {
        if (out_offsets != NULL) out_offsets[0] = 0;
        return ND_OK;
    }
    if (offsets == NULL || out_offsets == NULL || (flags & ~(unsigned)ND_FP_SHIFTED)) return ND_E_ARG;
    unsigned shift = flags & ND_FP_SHIFTED;
    for (size_t i = 0; i < n; i++) {
        if (offsets[i + 1] < offsets[i] || offsets[i + 1] - offsets[i] > UINT32_MAX) return ND_E_ARG;
        if (values == NULL && offsets[i + 1] != offsets[i]) return ND_E_ARG;
        for (uint64_t j = offsets[i] + 1; j < offsets[i + 1]; j++)
            if (values[j] <= values[j - 1]) return ND_E_ARG;
        if (shift && offsets[i + 1] != offsets[i] &&
            !ef_low_clear(values + offsets[i], (uint32_t)(offsets[i + 1] - offsets[i])))
            return ND_E_ARG;
    }
    uint64_t at = 0;
    out_offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t count = (uint32_t)(offsets[i + 1] - offsets[i]);
        const uint32_t *v = count ? values + offsets[i] : NULL;
        uint64_t need = count ? ef_size_of(count, v[count - 1], shift) : 0;
        if (need > out_cap - at || (need && out == NULL)) return ND_E_SPACE;
        at += ef_encode(v, count, shift, out + at);
        out_offsets[i + 1] = at;
    }
    return ND_OK;
}

ND_EXPORT uint64_t nd_fp_encoded_bound(const uint64_t *offsets, size_t n) {
    if (n == 0) return 0;
    if (offsets == NULL) return UINT64_MAX;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (offsets[i + 1] < offsets[i] || offsets[i + 1] - offsets[i] > UINT32_MAX)
            return UINT64_MAX;
        uint64_t count = offsets[i + 1] - offsets[i];
        if (count) total += ND_FP_ENCODED_MAX(count);
    }
    return total;
}

/* The argument checks nd_fp_decode_batch and nd_jaccard_many_encoded share. */
static int encoded_args(const uint8_t *data, uint64_t data_len, const uint64_t *starts,
                        const uint64_t *ends, const uint32_t *counts, size_t n) {
    if (starts == NULL || ends == NULL || counts == NULL) return ND_E_ARG;
    if (data == NULL && data_len != 0) return ND_E_ARG;
    for (size_t i = 0; i < n; i++)
        if (starts[i] > ends[i] || ends[i] > data_len) return ND_E_ARG;
    return ND_OK;
}

ND_EXPORT int nd_fp_decode_batch(const uint8_t *data, uint64_t data_len, const uint64_t *starts,
                                 const uint64_t *ends, const uint32_t *counts, size_t n,
                                 uint32_t *out, uint64_t out_cap, uint64_t *out_offsets,
                                 int32_t *status) {
    if (n == 0) {
        if (out_offsets != NULL) out_offsets[0] = 0;
        return ND_OK;
    }
    if (out_offsets == NULL || status == NULL) return ND_E_ARG;
    int rc = encoded_args(data, data_len, starts, ends, counts, n);
    if (rc != ND_OK) return rc;
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) total += counts[i];
    if (total > out_cap || (total && out == NULL)) return ND_E_SPACE;
    uint64_t at = 0;
    out_offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = data != NULL ? data + starts[i] : NULL;
        uint32_t *dst = out != NULL ? out + at : NULL; /* NULL only when every count is 0 */
        status[i] = ef_decode(p, ends[i] - starts[i], counts[i], dst);
        if (status[i] != ND_OK && counts[i]) memset(dst, 0, (size_t)counts[i] * sizeof *out);
        at += counts[i];
        out_offsets[i + 1] = at;
    }
    return ND_OK;
}

ND_EXPORT int nd_jaccard_many_encoded(const uint32_t *query, uint32_t nq, const uint8_t *data,
                                      uint64_t data_len, const uint64_t *starts,
                                      const uint64_t *ends, const uint32_t *counts, size_t n,
                                      uint32_t fp_size, double threshold, unsigned flags,
                                      double *out, int32_t *status) {
    if (fp_size == 0 || !query_ok(query, nq) || threshold != threshold) return ND_E_ARG;
    if (n == 0) return ND_OK;
    if (out == NULL || status == NULL) return ND_E_ARG;
    int rc = encoded_args(data, data_len, starts, ends, counts, n);
    if (rc != ND_OK) return rc;
    uint32_t *scratch = (uint32_t *)malloc(ND_MAX_FP_SIZE * sizeof *scratch);
    if (scratch == NULL) return ND_E_NOMEM;
    unsigned simd = nd_active(flags);
    nd_memo *memo = memo_new(threshold);
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = data != NULL ? data + starts[i] : NULL;
        status[i] = ef_decode(p, ends[i] - starts[i], counts[i], scratch);
        out[i] = status[i] != ND_OK ? 0.0
                                    : jaccard_one(query, nq, scratch, counts[i], fp_size,
                                                  threshold, memo, simd);
    }
    free(memo);
    free(scratch);
    return ND_OK;
}
