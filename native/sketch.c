/*
 * Sketches: shingle hashes from the scanner (scan.h) -> exact distinct set
 * (open addressing) -> for each new hash H: one-permutation MinHash bin update
 * (bin from the low 32 bits, value = the high 32 bits). Empty bins are
 * densified at the end.
 *
 * Bottom-N fingerprint: the distinct set is needed anyway for the exact
 * shingle count, so it is laid out by value: a hash's home slot is its top
 * bits, linear probing runs forward only (a spill area instead of wrapping),
 * so slot order is value order up to small displacements inside clusters.
 * The N smallest distinct values are read off the front of the table (up to
 * the first empty slot after N) and put in order by an insertion sort that
 * only has those displacements to fix. Nothing else is ever sorted, and there
 * is no per-shingle work for the fingerprint at all. (A separate 2N buffer
 * with a running cut-off, tried first, spent ~25% of the time sorting.)
 * The gathering has an AVX2 twin, behind the run-time CPU check. Texts read
 * with tokenizers 2 to 4 are scanned in sketch2.c (sketch.h says why).
 */
#define ND_SCAN_V2 0 /* tokenizer 1 only in this file */
#include "sketch.h"


static inline void insertion_sort(uint32_t *a, size_t n) {
    for (size_t i = 1; i < n; i++) {
        uint32_t x = a[i];
        if (a[i - 1] <= x) continue;
        size_t j = i;
        do {
            a[j] = a[j - 1];
            j--;
        } while (j > 0 && a[j - 1] > x);
        a[j] = x;
    }
}

/* sort (nearly sorted input), dedupe, keep at most max values */
static size_t sort_dedupe(uint32_t *a, size_t n, size_t max) {
    if (n == 0) return 0;
    insertion_sort(a, n);
    size_t m = 1;
    for (size_t i = 1; i < n && m < max; i++)
        if (a[i] != a[m - 1]) a[m++] = a[i];
    return m;
}

/* size the table for `slots` home slots (a power of two) */
static int set_alloc(nd_ctx *c, size_t slots) {
    unsigned bits = 0;
    while (((size_t)1 << bits) < slots) bits++;
    if (bits > 32) return ND_E_NOMEM; /* the order trick needs home <= value */
    size_t spill = 64 + slots / 16;
    if (slots + spill > c->tab_alloc) {
        free(c->tab);
        c->tab = (uint64_t *)malloc((slots + spill) * sizeof *c->tab);
        c->tab_alloc = c->tab ? slots + spill : 0;
        if (c->tab == NULL) return ND_E_NOMEM;
    }
    memset(c->tab, 0, (slots + spill) * sizeof *c->tab);
    c->slots = slots;
    c->spill = spill;
    c->shift = 64 - bits;
    c->limit = slots / 2;
    c->used = 0;
    return ND_OK;
}

static inline int set_place(uint64_t *tab, size_t end, unsigned shift, uint64_t h) {
    size_t i = shift >= 64 ? 0 : (size_t)(h >> shift);
    while (tab[i] != 0)
        if (++i == end) return 0;
    tab[i] = h;
    return 1;
}

/* double the table (also when probing ran off the end of the spill area) */
static int set_grow(nd_ctx *c) {
    size_t old_total = c->slots + c->spill;
    uint64_t *old = c->tab;
    size_t slots = c->slots;
    for (;;) {
        slots *= 2;
        c->tab = NULL;
        c->tab_alloc = 0;
        if (set_alloc(c, slots) != ND_OK) {
            free(c->tab);
            c->tab = old;
            c->tab_alloc = old_total;
            return ND_E_NOMEM;
        }
        size_t used = 0;
        int ok = 1;
        for (size_t i = 0; i < old_total && ok; i++)
            if (old[i] != 0) {
                ok = set_place(c->tab, c->slots + c->spill, c->shift, old[i]);
                used++;
            }
        if (ok) {
            c->used = used;
            free(old);
            return ND_OK;
        }
        free(c->tab); /* spill overflow again (freakishly unlucky): bigger still */
    }
}

/* Shingle hashes -> distinct set; each new one updates its signature bin. */
void nd_flush_shingles(nd_ctx *c, const uint64_t *hs, uint32_t nh) {
    uint64_t *tab = c->tab;
    size_t end = c->slots + c->spill;
    unsigned shift = c->shift;
    uint32_t *sig = c->sig;
    uint64_t np = c->num_perm;
    uint64_t count = c->count;
    for (uint32_t x = 0; x < nh; x++) {
        uint64_t h = hs[x];
        if (ND_UNLIKELY(h == 0)) {
            if (c->has_zero) continue;
            c->has_zero = 1;
        } else {
            size_t i = (size_t)(h >> shift);
            uint64_t t;
            while ((t = tab[i]) != 0 && t != h)
                if (ND_UNLIKELY(++i == end)) break;
            if (t == h) continue;
            if (ND_UNLIKELY(i == end || ++c->used > c->limit)) {
                if (i != end) c->used--;
                if (set_grow(c) != ND_OK) {
                    c->err = ND_E_NOMEM;
                    c->count = count;
                    return;
                }
                tab = c->tab;
                end = c->slots + c->spill;
                shift = c->shift;
                x--; /* insert h into the new table */
                continue;
            }
            tab[i] = h;
        }
        count++;
        uint32_t v = (uint32_t)(h >> 32);
        uint32_t bin = (uint32_t)(((uint64_t)(uint32_t)h * np) >> 32);
        uint32_t cur = sig[bin];
        sig[bin] = v < cur ? v : cur; /* branch-free: the outcome is a coin toss */
        if (ND_UNLIKELY(v == 0xFFFFFFFFu)) c->vmax[bin >> 6] |= 1ULL << (bin & 63);
    }
    c->count = count;
}

#if ND_X86
/* lanes holding the high halves of the non-empty slots among 4, packed low */
static const int32_t nd_compress4[16][8] = {
    {0, 0, 0, 0, 0, 0, 0, 0}, {1, 0, 0, 0, 0, 0, 0, 0}, {3, 0, 0, 0, 0, 0, 0, 0},
    {1, 3, 0, 0, 0, 0, 0, 0}, {5, 0, 0, 0, 0, 0, 0, 0}, {1, 5, 0, 0, 0, 0, 0, 0},
    {3, 5, 0, 0, 0, 0, 0, 0}, {1, 3, 5, 0, 0, 0, 0, 0}, {7, 0, 0, 0, 0, 0, 0, 0},
    {1, 7, 0, 0, 0, 0, 0, 0}, {3, 7, 0, 0, 0, 0, 0, 0}, {1, 3, 7, 0, 0, 0, 0, 0},
    {5, 7, 0, 0, 0, 0, 0, 0}, {1, 5, 7, 0, 0, 0, 0, 0}, {3, 5, 7, 0, 0, 0, 0, 0},
    {1, 3, 5, 7, 0, 0, 0, 0},
};

/* The branch-free gathering of bottom_n, 4 slots per step: the values of
 * the non-empty slots, in slot order (exactly what the scalar loop gathers). */
__attribute__((target("avx2,popcnt"))) static size_t gather_avx2(const uint64_t *tab, size_t *pi,
                                                                 size_t end, uint32_t *buf,
                                                                 size_t k, size_t n_max,
                                                                 size_t cap) {
    size_t i = *pi;
    const __m256i zero = _mm256_setzero_si256();
    while (k < n_max && i + 16 <= end) {
        if (k + 16 > cap) k = sort_dedupe(buf, k, n_max);
        for (size_t j = 0; j < 16; j += 4) {
            __m256i t = _mm256_loadu_si256((const __m256i *)(const void *)(tab + i + j));
            unsigned empty =
                (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(t, zero)));
            unsigned full = ~empty & 15u;
            __m256i idx =
                _mm256_loadu_si256((const __m256i *)(const void *)nd_compress4[full]);
            __m256i packed = _mm256_permutevar8x32_epi32(t, idx);
            _mm_storeu_si128((__m128i *)(void *)(buf + k), _mm256_castsi256_si128(packed));
            k += (size_t)__builtin_popcount(full);
        }
        i += 16;
    }
    *pi = i;
    return k;
}
#endif

/* The fp_size smallest distinct values, ascending, into out; returns how many.
 * Slots are in home order and an element never sits before its home, so once
 * N values are gathered, the first empty slot closes the scan: everything
 * past it has a larger home and so a larger value. Gathered values are sorted
 * but for the few displaced within a cluster. */
static uint32_t bottom_n(nd_ctx *c, uint32_t *out, unsigned simd) {
    const uint64_t *tab = c->tab;
    size_t end = c->slots + c->spill;
    size_t n_max = c->fp_size, cap = FP_BUF(c->fp_size);
    uint32_t *buf = c->fp;
    size_t k = 0, i = 0;
    if (c->has_zero) buf[k++] = 0;
    for (;;) {
        /* branch-free blocks while far from N */
#if ND_X86
        if (simd & ND_SIMD_AVX2) k = gather_avx2(tab, &i, end, buf, k, n_max, cap);
#else
        (void)simd;
#endif
        while (k < n_max && i + 16 <= end) {
            if (k + 16 > cap) k = sort_dedupe(buf, k, n_max);
            for (size_t j = 0; j < 16; j++) {
                uint64_t t = tab[i + j];
                buf[k] = (uint32_t)(t >> 32);
                k += t != 0;
            }
            i += 16;
        }
        /* then slot by slot to the end of the current cluster */
        for (; i < end; i++) {
            uint64_t t = tab[i];
            if (t == 0) {
                if (k >= n_max) break;
                continue;
            }
            if (k == cap) k = sort_dedupe(buf, k, n_max);
            buf[k++] = (uint32_t)(t >> 32);
        }
        k = sort_dedupe(buf, k, n_max);
        /* short of N only if equal 32-bit values were merged: read on */
        if (k >= n_max || i >= end) break;
    }
    memcpy(out, buf, k * sizeof *out);
    return (uint32_t)k;
}

static inline void roll_finish(nd_scan *c, nd_roll *r) {
    /* fewer than K items (unspaced scripts: no whole shingle): one shingle of all */
    if (r->n > 0 && (c->kc ? !r->emitted : r->n < c->k))
        r->hbuf[r->nh++] = fmix64(r->S ^ c->shingle_seed);
    nd_flush_shingles((nd_ctx *)c, r->hbuf, r->nh);
    r->nh = 0;
}

#if ND_X86
__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *sketch_avx2(
    nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end) {
    return scan_words_avx2(c, r, w, p, end, MODE_WORD);
}
#endif

#if ND_X86
const uint8_t *nd_sketch_ascii1(nd_ctx *c, nd_roll *r, nd_word *w, const uint8_t *p,
                                const uint8_t *end) {
    return sketch_avx2(&c->scan, r, w, p, end);
}
#endif

/* Optimal densification (Shrivastava 2017): empty bin i takes the value of
 * bin j = hash(seed, i, attempt) for the first attempt that hits a bin filled
 * by a shingle. Filling writes into empty bins, so the filled set is taken as
 * a snapshot first. */
static void densify(nd_ctx *c, uint64_t seed) {
    uint32_t np = c->num_perm;
    uint32_t words = (np + 63) / 64;
    uint64_t filled[ND_MAX_NUM_PERM / 64];
    memset(filled, 0, sizeof filled);
    for (uint32_t i = 0; i < np; i++) /* branch-free snapshot of the filled bins */
        filled[i >> 6] |= (uint64_t)(c->sig[i] != 0xFFFFFFFFu) << (i & 63);
    uint32_t nfilled = 0;
    for (uint32_t x = 0; x < words; x++) {
        filled[x] |= c->vmax[x];
        nfilled += (uint32_t)__builtin_popcountll(filled[x]);
    }
    if (nfilled == np || nfilled == 0) return;
    uint32_t *sig = c->sig;
    uint64_t dseed = seed_part(seed, 4);
    for (uint32_t x = 0; x < words; x++) {
        uint64_t empty = ~filled[x];
        if (x == np / 64) empty &= (1ULL << (np & 63)) - 1; /* no bins past np */
        for (; empty != 0; empty &= empty - 1) {
            uint32_t i = x * 64 + (uint32_t)__builtin_ctzll(empty);
            for (uint32_t attempt = 0;; attempt++) {
                uint32_t j;
                if (ND_UNLIKELY(attempt >= 64u * np)) {
                    /* practically unreachable: the next filled bin, cyclically */
                    j = i;
                    do j = (j + 1 == np) ? 0 : j + 1;
                    while (!((filled[j >> 6] >> (j & 63)) & 1));
                } else {
                    uint64_t h = fmix64(dseed ^ (((uint64_t)i << 32) | attempt));
                    j = (uint32_t)(((h & 0xFFFFFFFFULL) * np) >> 32);
                    if (!((filled[j >> 6] >> (j & 63)) & 1)) continue;
                }
                sig[i] = sig[j]; /* j was filled by a shingle, not by densification */
                break;
            }
        }
    }
}

static int sketch_one(nd_ctx *c, const uint8_t *p, size_t len, int kind, int tokenizer,
                      uint64_t seed, unsigned simd, uint32_t *fp_out, uint32_t *fp_len) {
    /* size the set for this text (about one shingle per 5 bytes of words);
     * it grows if the text has more */
    size_t est = kind == ND_SHINGLE_WORD ? len / 5 + 16 : len + 16;
    size_t slots = 64;
    while (slots < 2 * est && slots < ((size_t)1 << 22)) slots <<= 1;
    if (set_alloc(c, slots) != ND_OK) return ND_E_NOMEM;
    c->has_zero = 0;
    c->count = 0;
    c->err = 0;
    for (uint32_t i = 0; i < c->num_perm; i++) c->sig[i] = 0xFFFFFFFFu;
    memset(c->vmax, 0, sizeof c->vmax);

    nd_roll r;
    r.S = 0;
    r.n = 0;
    r.nh = 0;
    r.emitted = 0;
    memset(r.ring, 0, sizeof r.ring);
    nd_word w = {.h = c->scan.word_seed};

    const uint8_t *q = p;
    if (len > 0) {
        if (tokenizer >= ND_TOKENIZER_2)
            q = nd_sketch_scan2(c, &r, &w, p, len, kind, tokenizer, simd);
        else if (kind == ND_SHINGLE_WORD)
            q = sketch_scan(c, &r, &w, p, len, MODE_WORD, simd);
        else
            q = sketch_scan(c, &r, &w, p, len, MODE_CHAR, simd);
    }
    int rc = q == NULL ? ND_E_UTF8 : ND_OK;
    if (rc == ND_OK) {
        roll_finish(&c->scan, &r);
        rc = c->err;
    }
    if (rc != ND_OK) {
        for (uint32_t i = 0; i < c->num_perm; i++) c->sig[i] = 0xFFFFFFFFu;
        *fp_len = 0;
        c->count = 0;
        return rc;
    }
    *fp_len = bottom_n(c, fp_out, simd);
    if (c->count > 0) densify(c, seed);
    return ND_OK;
}

ND_EXPORT int nd_sketch_batch_packed(const uint8_t *data, const uint64_t *offsets, size_t n,
                                     int shingle_kind, int tokenizer, uint32_t k,
                                     uint32_t num_perm,
                                     uint32_t fp_size, uint64_t seed, unsigned flags,
                                     uint32_t *signatures, uint32_t *fp_values, uint64_t fp_cap,
                                     uint64_t *fp_offsets, uint64_t *shingles, int32_t *status) {
    if ((shingle_kind != ND_SHINGLE_WORD && shingle_kind != ND_SHINGLE_CHAR) ||
        (tokenizer < ND_TOKENIZER_1 || tokenizer > ND_TOKENIZER_4) || k < 1 ||
        k > ND_MAX_K || num_perm < 1 || num_perm > ND_MAX_NUM_PERM || fp_size < 1 ||
        fp_size > ND_MAX_FP_SIZE || fp_offsets == NULL || (fp_values == NULL && fp_cap > 0))
        return ND_E_ARG;
    fp_offsets[0] = 0;
    if (n == 0) return ND_OK;
    if (offsets == NULL || signatures == NULL || shingles == NULL || status == NULL ||
        (data == NULL && offsets[n] != offsets[0]))
        return ND_E_ARG;
    for (size_t i = 0; i < n; i++)
        if (offsets[i + 1] < offsets[i]) return ND_E_ARG;

    nd_ctx c;
    memset(&c, 0, sizeof c);
    c.num_perm = num_perm;
    c.fp_size = fp_size;
    scan_hashing(&c.scan, shingle_kind, k, seed);
    if (!scan_unspaced_args(&c.scan, tokenizer, shingle_kind, k, flags)) return ND_E_ARG;
    c.fp = (uint32_t *)malloc(FP_BUF(fp_size) * sizeof(uint32_t));
    uint32_t *row = (uint32_t *)malloc((size_t)fp_size * sizeof(uint32_t));
    int ret = ND_OK;
    if (c.fp == NULL || row == NULL) {
        ret = ND_E_NOMEM;
        for (size_t i = 0; i < n; i++) status[i] = ND_E_NOMEM;
        goto done;
    }
    unsigned simd = nd_active(flags);
    uint64_t packed = 0;
    for (size_t i = 0; i < n; i++) {
        c.sig = signatures + i * num_perm;
        const uint8_t *p = data ? data + offsets[i] : NULL;
        size_t len = (size_t)(offsets[i + 1] - offsets[i]);
        uint32_t flen = 0;
        int rc = sketch_one(&c, p, len, shingle_kind, tokenizer, seed, simd, row, &flen);
        status[i] = rc;
        shingles[i] = rc == ND_OK ? c.count : 0;
        if (flen > fp_cap - packed) {
            ret = ND_E_SPACE;
            for (size_t j = i; j < n; j++) status[j] = ND_E_SPACE;
            break;
        }
        if (flen > 0) memcpy(fp_values + packed, row, (size_t)flen * sizeof *row);
        packed += flen;
        fp_offsets[i + 1] = packed;
        if (rc == ND_E_NOMEM) {
            ret = ND_E_NOMEM;
            for (size_t j = i + 1; j < n; j++) status[j] = ND_E_NOMEM;
            break;
        }
    }
done:
    free(c.tab);
    free(c.fp);
    free(row);
    return ret;
}
