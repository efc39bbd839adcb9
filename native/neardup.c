/*
 * neardup kernel. neardup.h states the contract; ARCHITECTURE.md at the
 * repository root places the kernel in the service. Per text, in one pass
 * over its bytes:
 *
 *   UTF-8 decode (strict) -> case fold + alnum test (two-stage tables made by
 *   gen_unicode.py) -> per-word 64-bit hash, fed 8 folded bytes at a time ->
 *   rolling polynomial over the last K word hashes (O(1) per shingle) ->
 *   fmix64 -> shingle hash H -> exact distinct set (open addressing) -> for
 *   each new H: one-permutation MinHash bin update (bin from the low 32 bits,
 *   value = the high 32 bits). Empty bins are densified at the end.
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
 *
 * Winnowing runs the same scanner (so the same shingle hashes) with code point
 * positions tracked, into a sliding-window minimum instead of the set.
 *
 * SIMD: an AVX2 scanner for ASCII (classify + fold 64 bytes per step, words
 * found with bit scans and hashed straight from the folded block), the SSE4.2
 * pcmpestrm block skip in the Jaccard merge, and AVX2 compares in the
 * winnowing window (the next hash that is not larger than the minimum; the
 * rightmost minimum of a window). All sit in target regions behind a run-time
 * CPU check (NEARDUP_SIMD=off turns them off) and produce exactly what the
 * scalar code produces: the scalar code defines the result, and the tests
 * compare them on every input they try.
 */
#include "neardup.h"

#include <stdlib.h>
#include <string.h>

#include "unicode_tables.h"

#if defined(__x86_64__) || defined(__i386__)
#define ND_X86 1
#include <immintrin.h>
#else
#define ND_X86 0
#endif

#define ND_EXPORT __attribute__((visibility("default")))
#define ND_LIKELY(x) __builtin_expect(!!(x), 1)
#define ND_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------ */
/* CPU features, computed once                                          */

/* -1: not yet known. Computing it twice gives the same value, so a race
 * between two first callers is benign; the constructor below normally sets it
 * at load time anyway. Atomic accesses keep sanitizers and the C model happy. */
static int nd_level_cache = -1;

static unsigned nd_detect_level(void) {
    unsigned lv = 0;
#if ND_X86
    __builtin_cpu_init();
    /* each level also needs what its target regions use besides the name */
    if (__builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("popcnt")) lv |= ND_SIMD_SSE42;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") &&
        __builtin_cpu_supports("bmi2"))
        lv |= ND_SIMD_AVX2;
#endif
    const char *env = getenv("NEARDUP_SIMD");
    if (env != NULL && (strcmp(env, "off") == 0 || strcmp(env, "0") == 0 ||
                        strcmp(env, "scalar") == 0 || strcmp(env, "none") == 0))
        lv = 0;
    return lv;
}

ND_EXPORT unsigned nd_simd_level(void) {
    int v = __atomic_load_n(&nd_level_cache, __ATOMIC_ACQUIRE);
    if (ND_UNLIKELY(v < 0)) {
        v = (int)nd_detect_level();
        __atomic_store_n(&nd_level_cache, v, __ATOMIC_RELEASE);
    }
    return (unsigned)v;
}

__attribute__((constructor)) static void nd_init_level(void) { (void)nd_simd_level(); }

static inline unsigned nd_active(unsigned flags) {
    return (flags & ND_FLAG_SCALAR) ? 0u : nd_simd_level();
}

ND_EXPORT const char *nd_unicode_version(void) { return ND_UC_UNICODE_VERSION; }

ND_EXPORT unsigned nd_abi_version(void) { return ND_ABI_VERSION; }

/* ------------------------------------------------------------------ */
/* Hashing                                                              */

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

/* ------------------------------------------------------------------ */
/* UTF-8 decoding and folding                                           */

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

/* ------------------------------------------------------------------ */
/* Sketch state                                                         */

#define ND_HBUF 128 /* shingle hashes gathered before the set/signature pass */

typedef struct {
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
    /* hashing parameters */
    uint32_t k;
    uint64_t bk1; /* B^(K-1) */
    uint64_t shingle_seed, word_seed, char_seed;
    struct nd_win *win; /* where shingles go when winnowing (MODE_SPANS) */
} nd_ctx;

#define FP_BUF(n) (2 * (size_t)(n) + 64)

/* Rolling window and the pending shingle hashes; on the scanner's stack. */
typedef struct {
    uint64_t S; /* sum of the window's item hashes times powers of B */
    uint64_t n; /* items (words or code points) rolled in */
    uint32_t nh;
    uint64_t ring[16]; /* item i at ring[i & 15]; never-written slots are 0 */
    uint64_t hbuf[ND_HBUF];
    /* winnowing only: item i covers code points [ps[i & 15], pe[i & 15]) */
    int64_t ps[16], pe[16];
} nd_roll;

/* The word being hashed: its folded UTF-8 bytes, 8 at a time, little endian,
 * the last chunk zero padded; word hash = fmix64(h + len). The positions are
 * kept only when winnowing: cp counts the text's code points before the one
 * being read, start/end delimit the current word (char mode: end is one past
 * the last letter or digit so far). */
typedef struct {
    uint64_t h, acc, len;
    uint32_t nacc;
    int in_word;
    int64_t cp, start, end;
} nd_word;

/* What a scanner makes: the shingle kind, and whether the shingles go to
 * winnowing with the code points they cover. The sketch needs no positions;
 * the mode is a constant at every call, so it pays nothing for them. */
enum { MODE_WORD = 0, MODE_CHAR = 1, MODE_SPANS = 2 };
#define MODE_KIND(m) ((m) & 1)
#define MODE_HAS_SPANS(m) ((m) & MODE_SPANS)

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
static void flush_shingles(nd_ctx *c, const uint64_t *hs, uint32_t nh) {
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

static void win_push(struct nd_win *v, uint64_t h, int64_t start, int64_t end);

/* Roll one item hash (word or code point) into the K-window. [s, e) are the
 * code points the item covers (winnowing only). */
static inline void roll_push(nd_ctx *c, nd_roll *r, int mode, uint64_t x, int64_t s, int64_t e) {
    uint64_t old = r->ring[(r->n - c->k) & 15]; /* 0 while fewer than K items */
    uint64_t S = (r->S - old * c->bk1) * ND_B + x;
    r->S = S;
    r->ring[r->n & 15] = x;
    if (MODE_HAS_SPANS(mode)) {
        r->ps[r->n & 15] = s;
        r->pe[r->n & 15] = e;
    }
    if (++r->n >= c->k) {
        if (MODE_HAS_SPANS(mode)) {
            int64_t a = r->ps[(r->n - c->k) & 15], b = r->pe[(r->n - 1) & 15];
            /* reversed only for a char:1 shingle that is the space between two
             * words: it covers what lies between them, in either order */
            win_push(c->win, fmix64(S ^ c->shingle_seed), a < b ? a : b, a < b ? b : a);
            return;
        }
        r->hbuf[r->nh++] = fmix64(S ^ c->shingle_seed);
        if (ND_UNLIKELY(r->nh == ND_HBUF)) {
            flush_shingles(c, r->hbuf, ND_HBUF);
            r->nh = 0;
        }
    }
}

static inline void roll_finish(nd_ctx *c, nd_roll *r) {
    /* fewer than K items: one shingle of all of them */
    if (r->n > 0 && r->n < c->k) r->hbuf[r->nh++] = fmix64(r->S ^ c->shingle_seed);
    flush_shingles(c, r->hbuf, r->nh);
    r->nh = 0;
}

static inline void word_byte(nd_word *w, uint8_t b) {
    w->acc |= (uint64_t)b << (8 * w->nacc);
    w->len++;
    if (++w->nacc == 8) {
        w->h = (w->h ^ w->acc) * ND_M1;
        w->acc = 0;
        w->nacc = 0;
    }
}

static inline void word_end(nd_ctx *c, nd_roll *r, nd_word *w, int mode) {
    uint64_t h = w->h;
    if (w->nacc) h = (h ^ w->acc) * ND_M1;
    roll_push(c, r, mode, fmix64(h + w->len), w->start, w->end);
    w->h = c->word_seed;
    w->acc = 0;
    w->nacc = 0;
    w->len = 0;
    w->in_word = 0;
}

static inline uint64_t char_hash(const nd_ctx *c, uint32_t cp) {
    return fmix64(((uint64_t)cp + 1) * ND_M1 ^ c->char_seed);
}

/* a letter or digit of a word at code point w->cp: where the word is */
static inline void word_span(nd_word *w, int mode) {
    if (MODE_HAS_SPANS(mode)) {
        if (!w->in_word) w->start = w->cp;
        w->end = w->cp + 1;
    }
}

/* one folded non-ASCII output code point, word mode */
static inline void word_cp(nd_ctx *c, nd_roll *r, nd_word *w, int mode, uint32_t cp, int alnum) {
    if (!alnum) {
        if (w->in_word) word_end(c, r, w, mode);
        return;
    }
    word_span(w, mode);
    uint8_t buf[4];
    size_t n = utf8_encode(cp, buf);
    for (size_t i = 0; i < n; i++) word_byte(w, buf[i]);
    w->in_word = 1;
}

/* One folded output code point, char mode (w tracks in_word, and where the
 * last letter or digit ended). The space between two words is given the span
 * from the next word's start back to the previous one's end, so that the span
 * of a shingle, first item's start to last item's end, begins and ends at
 * letters or digits. */
static inline void char_cp(nd_ctx *c, nd_roll *r, nd_word *w, int mode, uint32_t cp, int alnum) {
    if (!alnum) {
        w->in_word = 0;
        return;
    }
    if (!w->in_word && w->len > 0) /* len: words seen */
        roll_push(c, r, mode, char_hash(c, 0x20), w->cp, w->end);
    if (!w->in_word) w->len++;
    roll_push(c, r, mode, char_hash(c, cp), w->cp, w->cp + 1);
    if (MODE_HAS_SPANS(mode)) w->end = w->cp + 1;
    w->in_word = 1;
}

/* decode + fold one non-ASCII sequence at p; returns bytes consumed, 0 = invalid */
static inline size_t scan_nonascii(nd_ctx *c, nd_roll *r, nd_word *w, int mode, const uint8_t *p,
                                   const uint8_t *end) {
    uint32_t cp;
    size_t n = utf8_decode(p, end, &cp);
    if (n == 0) return 0;
    const nd_uc_rec *u = uc_lookup(cp);
    if (ND_LIKELY(u->n == 1)) {
        uint32_t f = (uint32_t)((int32_t)cp + u->delta);
        if (MODE_KIND(mode) == MODE_WORD)
            word_cp(c, r, w, mode, f, u->alnum & 1);
        else
            char_cp(c, r, w, mode, f, u->alnum & 1);
    } else {
        const uint32_t *x = nd_uc_exp[u->exp];
        for (unsigned i = 0; i < u->n; i++) {
            if (MODE_KIND(mode) == MODE_WORD)
                word_cp(c, r, w, mode, x[i], (u->alnum >> i) & 1);
            else
                char_cp(c, r, w, mode, x[i], (u->alnum >> i) & 1);
        }
    }
    return n;
}

/* Scalar scanner, the reference for every path: bytes from p until p >= stop
 * (a multi-byte sequence may run on up to end). NULL on invalid UTF-8. */
static inline const uint8_t *scan_scalar(nd_ctx *c, nd_roll *r, nd_word *w, int mode,
                                         const uint8_t *p, const uint8_t *stop,
                                         const uint8_t *end) {
    while (p < stop) {
        uint8_t b = *p;
        if (b < 0x80) {
            uint8_t f = nd_ascii_fold[b];
            if (MODE_KIND(mode) == MODE_WORD) {
                if (f) {
                    word_span(w, mode);
                    word_byte(w, f);
                    w->in_word = 1;
                } else if (w->in_word) {
                    word_end(c, r, w, mode);
                }
            } else {
                char_cp(c, r, w, mode, f, f != 0);
            }
            p++;
            if (MODE_HAS_SPANS(mode)) w->cp++;
            continue;
        }
        size_t n = scan_nonascii(c, r, w, mode, p, end);
        if (n == 0) return NULL;
        p += n;
        if (MODE_HAS_SPANS(mode)) w->cp++;
    }
    return p;
}

#if ND_X86
__attribute__((target("avx2,bmi,bmi2"))) static inline void word_push_avx2(nd_word *w,
                                                                          const uint8_t *src,
                                                                          unsigned n) {
    /* n bytes of a word that crosses a block boundary; src readable for n + 8 */
    while (n > 0) {
        unsigned room = 8 - w->nacc;
        unsigned take = n < room ? n : room;
        uint64_t chunk;
        memcpy(&chunk, src, 8);
        w->acc |= _bzhi_u64(chunk, 8 * take) << (8 * w->nacc);
        w->nacc += take;
        w->len += take;
        if (w->nacc == 8) {
            w->h = (w->h ^ w->acc) * ND_M1;
            w->acc = 0;
            w->nacc = 0;
        }
        src += take;
        n -= take;
    }
}

/* One 64-byte all-ASCII block; byte i is code point w->cp + i (the caller
 * moves w->cp on). Inlined into each scanner so that mode is a constant. */
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline void words_block_avx2(
    nd_ctx *c, nd_roll *r, nd_word *w, const uint8_t *p, int mode) {
    uint8_t folded[64 + 24];
    memset(folded + 64, 0, 24);
    const __m256i a_1 = _mm256_set1_epi8('A' - 1), z_1 = _mm256_set1_epi8('Z' + 1);
    const __m256i la_1 = _mm256_set1_epi8('a' - 1), lz_1 = _mm256_set1_epi8('z' + 1);
    const __m256i d0_1 = _mm256_set1_epi8('0' - 1), d9_1 = _mm256_set1_epi8('9' + 1);
    const __m256i bit5 = _mm256_set1_epi8(0x20);
    uint64_t m = 0;
    for (int half = 0; half < 2; half++) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * half));
        __m256i up = _mm256_and_si256(_mm256_cmpgt_epi8(x, a_1), _mm256_cmpgt_epi8(z_1, x));
        __m256i lo = _mm256_or_si256(x, _mm256_and_si256(up, bit5));
        __m256i isl = _mm256_and_si256(_mm256_cmpgt_epi8(lo, la_1), _mm256_cmpgt_epi8(lz_1, lo));
        __m256i isd = _mm256_and_si256(_mm256_cmpgt_epi8(x, d0_1), _mm256_cmpgt_epi8(d9_1, x));
        uint32_t mm = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(isl, isd));
        m |= (uint64_t)mm << (32 * half);
        _mm256_storeu_si256((__m256i *)(void *)(folded + 32 * half), lo);
    }
    if (w->in_word) {
        /* the word from the previous block goes on for `run` bytes */
        unsigned run = (unsigned)_tzcnt_u64(~m);
        word_push_avx2(w, folded, run);
        if (MODE_HAS_SPANS(mode) && run > 0) w->end = w->cp + run;
        if (run == 64) return;
        word_end(c, r, w, mode);
        m &= ~_bzhi_u64(~0ULL, run);
    }
    const uint64_t wseed = c->word_seed;
    while (m) {
        unsigned s = (unsigned)_tzcnt_u64(m);
        unsigned len = (unsigned)_tzcnt_u64(~(m >> s)); /* <= 64 - s */
        if (s + len == 64) {
            /* runs into the next block: hash incrementally */
            word_push_avx2(w, folded + s, len);
            if (MODE_HAS_SPANS(mode)) {
                w->start = w->cp + s;
                w->end = w->cp + 64;
            }
            w->in_word = 1;
            return;
        }
        const uint8_t *q = folded + s;
        uint64_t h, c0, c1;
        memcpy(&c0, q, 8);
        memcpy(&c1, q + 8, 8);
        if (ND_LIKELY(len <= 16)) {
            /* one or two chunks, chosen without a branch */
            unsigned l0 = len < 8 ? len : 8;
            uint64_t h1 = (wseed ^ _bzhi_u64(c0, 8 * l0)) * ND_M1;
            uint64_t h2 = (h1 ^ _bzhi_u64(c1, 8 * (len - l0))) * ND_M1;
            h = len > 8 ? h2 : h1;
        } else {
            h = wseed;
            unsigned left = len;
            while (left > 8) {
                memcpy(&c0, q, 8);
                h = (h ^ c0) * ND_M1;
                q += 8;
                left -= 8;
            }
            memcpy(&c0, q, 8);
            h = (h ^ _bzhi_u64(c0, 8 * left)) * ND_M1;
        }
        roll_push(c, r, mode, fmix64(h + len), w->cp + s, w->cp + s + len);
        m &= m + (m & (0 - m)); /* clear this run of ones */
    }
}

/* AVX2 word scanner for ASCII: fold and classify 64 bytes per step, then walk
 * the words with bit scans and hash each in 8-byte chunks straight from the
 * folded block. Hashes exactly as word_byte/word_end would; blocks with a
 * byte >= 0x80 go through scan_scalar. The last partial block is padded with
 * NUL bytes (separators), which ends the last word just as the text end does. */
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline const uint8_t *
scan_words_avx2(nd_ctx *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end,
                int mode) {
    while ((size_t)(end - p) >= 64) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
        if (ND_UNLIKELY(_mm256_movemask_epi8(_mm256_or_si256(x0, x1)) != 0)) {
            p = scan_scalar(c, r, w, mode, p, p + 64, end);
            if (p == NULL) return NULL;
            continue;
        }
        words_block_avx2(c, r, w, p, mode);
        if (MODE_HAS_SPANS(mode)) w->cp += 64;
        p += 64;
    }
    size_t rest = (size_t)(end - p);
    if (rest > 0) {
        uint8_t tail[64];
        memset(tail, 0, sizeof tail);
        memcpy(tail, p, rest);
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)tail);
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(tail + 32));
        if (_mm256_movemask_epi8(_mm256_or_si256(x0, x1)) != 0)
            return scan_scalar(c, r, w, mode, p, end, end);
        words_block_avx2(c, r, w, tail, mode);
        if (MODE_HAS_SPANS(mode)) w->cp += (int64_t)rest;
    }
    return end;
}

__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *scan_words_avx2_sketch(
    nd_ctx *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end) {
    return scan_words_avx2(c, r, w, p, end, MODE_WORD);
}

__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *scan_words_avx2_spans(
    nd_ctx *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end) {
    return scan_words_avx2(c, r, w, p, end, MODE_WORD | MODE_SPANS);
}
#endif

/* ------------------------------------------------------------------ */
/* Sketch                                                               */

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

static int sketch_one(nd_ctx *c, const uint8_t *p, size_t len, int kind, uint64_t seed,
                      unsigned simd, uint32_t *fp_out, uint32_t *fp_len) {
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
    memset(r.ring, 0, sizeof r.ring);
    nd_word w = {.h = c->word_seed};

    const uint8_t *q = p;
    if (len > 0) {
        if (kind == ND_SHINGLE_WORD) {
#if ND_X86
            if (simd & ND_SIMD_AVX2)
                q = scan_words_avx2_sketch(c, &r, &w, p, p + len);
            else
#endif
                q = scan_scalar(c, &r, &w, MODE_WORD, p, p + len, p + len);
            if (q != NULL && w.in_word) word_end(c, &r, &w, MODE_WORD);
        } else {
            q = scan_scalar(c, &r, &w, MODE_CHAR, p, p + len, p + len);
        }
    }
    int rc = q == NULL ? ND_E_UTF8 : ND_OK;
    if (rc == ND_OK) {
        roll_finish(c, &r);
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

/* The hashing parameters: the same for sketching and winnowing, which is what
 * makes their shingle hashes the same. */
static void ctx_hashing(nd_ctx *c, int kind, uint32_t k, uint64_t seed) {
    c->k = k;
    c->bk1 = 1;
    for (uint32_t i = 1; i < k; i++) c->bk1 *= ND_B;
    c->shingle_seed = seed_part(seed, 1) ^ ((uint64_t)kind << 8 | k);
    c->word_seed = seed_part(seed, 2);
    c->char_seed = seed_part(seed, 3);
}

ND_EXPORT int nd_sketch_batch_packed(const uint8_t *data, const uint64_t *offsets, size_t n,
                                     int shingle_kind, uint32_t k, uint32_t num_perm,
                                     uint32_t fp_size, uint64_t seed, unsigned flags,
                                     uint32_t *signatures, uint32_t *fp_values, uint64_t fp_cap,
                                     uint64_t *fp_offsets, uint64_t *shingles, int32_t *status) {
    if ((shingle_kind != ND_SHINGLE_WORD && shingle_kind != ND_SHINGLE_CHAR) || k < 1 ||
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
    ctx_hashing(&c, shingle_kind, k, seed);
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
        int rc = sketch_one(&c, p, len, shingle_kind, seed, simd, row, &flen);
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

/* ------------------------------------------------------------------ */
/* Winnowing                                                            */

/* Shingles of a text pass through a linear buffer: the last `w` processed
 * entries stay (the window that can still reach back to them) and new ones are
 * appended after them; when it is full the selections are made over the new
 * entries and the last `w` are moved to the front. Moving costs w entries per
 * chunk of at least w, so at most one copy per shingle. */
#define ND_WIN_CHUNK 1024

struct nd_win {
    uint64_t *h;        /* shingle hashes, entries [0, len) */
    int64_t *s, *e;     /* the code points each covers */
    size_t len, cap;    /* cap = w + max(w, ND_WIN_CHUNK) */
    size_t done;        /* entries [0, done) have been through the window */
    size_t cur;         /* the current window's rightmost minimum (once a window is full) */
    uint64_t base;      /* shingles of this text dropped off the front */
    uint32_t w;
    unsigned simd;
    uint64_t *oh;       /* the caller's outputs */
    int64_t *os, *oe;
    uint64_t olen, ocap;
    int err;
};

/* first i in [i, stop) with h[i] <= v, else stop */
static inline size_t find_le_scalar(const uint64_t *h, size_t i, size_t stop, uint64_t v) {
    for (; i < stop; i++)
        if (h[i] <= v) return i;
    return stop;
}

/* the rightmost position of the minimum of h[lo, hi), hi > lo */
static inline size_t argmin_right_scalar(const uint64_t *h, size_t lo, size_t hi) {
    size_t best = hi - 1;
    uint64_t m = h[best];
    for (size_t j = best; j-- > lo;)
        if (h[j] < m) {
            m = h[j];
            best = j;
        }
    return best;
}

#if ND_X86
/* AVX2 has only signed 64-bit compares: flipping the top bit maps unsigned
 * order onto signed order. */
__attribute__((target("avx2,bmi"))) static size_t find_le_avx2(const uint64_t *h, size_t i,
                                                                size_t stop, uint64_t v) {
    const __m256i bias = _mm256_set1_epi64x(INT64_MIN);
    const __m256i vb = _mm256_xor_si256(_mm256_set1_epi64x((long long)v), bias);
    for (; i + 8 <= stop; i += 8) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(h + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(h + i + 4));
        __m256i ga = _mm256_cmpgt_epi64(_mm256_xor_si256(a, bias), vb);
        __m256i gb = _mm256_cmpgt_epi64(_mm256_xor_si256(b, bias), vb);
        unsigned gt = (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(ga)) |
                      (unsigned)_mm256_movemask_pd(_mm256_castsi256_pd(gb)) << 4;
        if (gt != 0xFFu) return i + (size_t)_tzcnt_u32(~gt);
    }
    return find_le_scalar(h, i, stop, v);
}

/* Per lane, the minimum and its last position (later entries win ties), then
 * the lanes compared, then the entries past the last full vector. */
__attribute__((target("avx2"))) static size_t argmin_right_avx2(const uint64_t *h, size_t lo,
                                                                size_t hi) {
    if (hi - lo < 4) return argmin_right_scalar(h, lo, hi);
    const __m256i bias = _mm256_set1_epi64x(INT64_MIN);
    __m256i mn = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(h + lo)), bias);
    __m256i at = _mm256_set_epi64x((long long)lo + 3, (long long)lo + 2, (long long)lo + 1,
                                   (long long)lo);
    __m256i pos = _mm256_add_epi64(at, _mm256_set1_epi64x(4));
    const __m256i four = _mm256_set1_epi64x(4);
    size_t j = lo + 4;
    for (; j + 4 <= hi; j += 4) {
        __m256i x = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(const void *)(h + j)), bias);
        __m256i keep = _mm256_cmpgt_epi64(x, mn); /* the old minimum stays where x > it */
        mn = _mm256_blendv_epi8(x, mn, keep);
        at = _mm256_blendv_epi8(pos, at, keep);
        pos = _mm256_add_epi64(pos, four);
    }
    uint64_t lm[4];
    uint64_t la[4];
    _mm256_storeu_si256((__m256i *)(void *)lm, _mm256_xor_si256(mn, bias));
    _mm256_storeu_si256((__m256i *)(void *)la, at);
    size_t best = (size_t)la[0];
    uint64_t m = lm[0];
    for (int l = 1; l < 4; l++)
        if (lm[l] < m || (lm[l] == m && (size_t)la[l] > best)) {
            m = lm[l];
            best = (size_t)la[l];
        }
    for (; j < hi; j++)
        if (h[j] <= m) {
            m = h[j];
            best = j;
        }
    return best;
}
#endif

/* Below ND_WIN_SIMD_MIN entries the call into a target region costs more than
 * the vectors save (small windows, or the stretch left before a minimum leaves). */
#define ND_WIN_SIMD_MIN 16

static inline size_t find_le(const struct nd_win *v, size_t i, size_t stop, uint64_t x) {
#if ND_X86
    if ((v->simd & ND_SIMD_AVX2) && stop - i >= ND_WIN_SIMD_MIN)
        return find_le_avx2(v->h, i, stop, x);
#endif
    return find_le_scalar(v->h, i, stop, x);
}

static inline size_t argmin_right(const struct nd_win *v, size_t lo, size_t hi) {
#if ND_X86
    if ((v->simd & ND_SIMD_AVX2) && hi - lo >= ND_WIN_SIMD_MIN)
        return argmin_right_avx2(v->h, lo, hi);
#endif
    return argmin_right_scalar(v->h, lo, hi);
}

static inline void win_select(struct nd_win *v, size_t i) {
    v->cur = i;
    if (ND_UNLIKELY(v->olen == v->ocap)) {
        v->err = ND_E_SPACE;
        return;
    }
    v->oh[v->olen] = v->h[i];
    v->os[v->olen] = v->s[i];
    v->oe[v->olen] = v->e[i];
    v->olen++;
}

/* Windows ending at the entries [done, len). The current minimum is replaced
 * by the first later entry that is not larger (rightmost on ties), or, when
 * it leaves the window first, by the rightmost minimum of the window then.
 * Either way the selection moves, so each replacement is a new selection. */
static void win_run(struct nd_win *v) {
    size_t i = v->done, len = v->len, w = v->w;
    if (v->base + i < w - 1) { /* no full window yet */
        i = (size_t)(w - 1 - v->base);
        if (i >= len) {
            v->done = len;
            return;
        }
        win_select(v, argmin_right(v, i + 1 - w, i + 1));
        i++;
    }
    while (i < len && !v->err) {
        size_t leave = v->cur + w; /* the first window without cur */
        size_t stop = leave < len ? leave : len;
        size_t j = find_le(v, i, stop, v->h[v->cur]);
        if (j < stop) {
            win_select(v, j);
            i = j + 1;
        } else if (leave < len) {
            win_select(v, argmin_right(v, leave + 1 - w, leave + 1));
            i = leave + 1;
        } else {
            i = stop;
        }
    }
    v->done = len;
}

static void win_push(struct nd_win *v, uint64_t h, int64_t start, int64_t end) {
    if (ND_UNLIKELY(v->err)) return;
    size_t i = v->len++;
    v->h[i] = h;
    v->s[i] = start;
    v->e[i] = end;
    if (ND_UNLIKELY(v->len == v->cap)) {
        win_run(v);
        if (v->err) return;
        /* cur is within the last w entries: the window of the last one holds it */
        size_t drop = v->len - v->w;
        memmove(v->h, v->h + drop, v->w * sizeof *v->h);
        memmove(v->s, v->s + drop, v->w * sizeof *v->s);
        memmove(v->e, v->e + drop, v->w * sizeof *v->e);
        v->base += drop;
        v->cur -= drop;
        v->len = v->done = v->w;
    }
}

/* The text's last windows; a text with fewer shingles than w has one window
 * of all of them. */
static void win_finish(struct nd_win *v) {
    if (v->err) return;
    win_run(v);
    if (v->base + v->len < v->w && v->len > 0) win_select(v, argmin_right(v, 0, v->len));
}

static int winnow_one(nd_ctx *c, struct nd_win *v, const uint8_t *p, size_t len, int kind) {
    v->len = v->done = v->cur = 0;
    v->base = 0;
    v->err = ND_OK;
    nd_roll r;
    r.S = 0;
    r.n = 0;
    r.nh = 0;
    memset(r.ring, 0, sizeof r.ring);
    nd_word w = {.h = c->word_seed};
    const uint8_t *q = p;
    if (len > 0) {
        if (kind == ND_SHINGLE_WORD) {
#if ND_X86
            if (v->simd & ND_SIMD_AVX2)
                q = scan_words_avx2_spans(c, &r, &w, p, p + len);
            else
#endif
                q = scan_scalar(c, &r, &w, MODE_WORD | MODE_SPANS, p, p + len, p + len);
            if (q != NULL && w.in_word) word_end(c, &r, &w, MODE_WORD | MODE_SPANS);
        } else {
            q = scan_scalar(c, &r, &w, MODE_CHAR | MODE_SPANS, p, p + len, p + len);
        }
    }
    if (q == NULL) return ND_E_UTF8;
    win_finish(v);
    return v->err;
}

ND_EXPORT int nd_winnow_batch(const uint8_t *data, const uint64_t *offsets, size_t n,
                              int shingle_kind, uint32_t k, uint32_t window, uint64_t seed,
                              unsigned flags, uint64_t *hashes, int64_t *starts, int64_t *ends,
                              uint64_t cap, uint64_t *sel_offsets, int32_t *status) {
    if ((shingle_kind != ND_SHINGLE_WORD && shingle_kind != ND_SHINGLE_CHAR) || k < 1 ||
        k > ND_MAX_K || window < 1 || window > ND_MAX_WINDOW || sel_offsets == NULL ||
        (cap > 0 && (hashes == NULL || starts == NULL || ends == NULL)))
        return ND_E_ARG;
    sel_offsets[0] = 0;
    if (n == 0) return ND_OK;
    if (offsets == NULL || status == NULL || (data == NULL && offsets[n] != offsets[0]))
        return ND_E_ARG;
    for (size_t i = 0; i < n; i++)
        if (offsets[i + 1] < offsets[i]) return ND_E_ARG;

    nd_ctx c;
    memset(&c, 0, sizeof c);
    ctx_hashing(&c, shingle_kind, k, seed);
    struct nd_win v;
    memset(&v, 0, sizeof v);
    c.win = &v;
    v.w = window;
    v.cap = (size_t)window + (window > ND_WIN_CHUNK ? window : ND_WIN_CHUNK);
    v.simd = nd_active(flags);
    v.oh = hashes;
    v.os = starts;
    v.oe = ends;
    v.ocap = cap;
    v.h = (uint64_t *)malloc(v.cap * sizeof *v.h);
    v.s = (int64_t *)malloc(v.cap * sizeof *v.s);
    v.e = (int64_t *)malloc(v.cap * sizeof *v.e);
    int ret = ND_OK;
    if (v.h == NULL || v.s == NULL || v.e == NULL) {
        ret = ND_E_NOMEM;
        for (size_t i = 0; i < n; i++) {
            status[i] = ND_E_NOMEM;
            sel_offsets[i + 1] = 0;
        }
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = data ? data + offsets[i] : NULL;
        int rc = winnow_one(&c, &v, p, (size_t)(offsets[i + 1] - offsets[i]), shingle_kind);
        status[i] = rc;
        if (rc == ND_E_SPACE) {
            ret = ND_E_SPACE;
            for (size_t j = i; j < n; j++) {
                status[j] = ND_E_SPACE;
                sel_offsets[j + 1] = sel_offsets[i];
            }
            break;
        }
        if (rc != ND_OK) v.olen = sel_offsets[i]; /* a text that is not UTF-8 selects nothing */
        sel_offsets[i + 1] = v.olen;
    }
done:
    free(v.h);
    free(v.s);
    free(v.e);
    return ret;
}

/* ------------------------------------------------------------------ */
/* Normalize                                                            */

ND_EXPORT int nd_normalize(const uint8_t *text, size_t len, uint8_t *out, size_t out_cap,
                           size_t *out_len) {
    if ((text == NULL && len > 0) || out == NULL || out_len == NULL) return ND_E_ARG;
    const uint8_t *p = text, *end = text + len;
    size_t o = 0;
    int in_word = 0, any = 0;
    *out_len = 0;
    while (p < end) {
        uint32_t outs[3];
        uint8_t alnum;
        unsigned nout;
        if (*p < 0x80) {
            uint8_t f = nd_ascii_fold[*p];
            outs[0] = f;
            alnum = f != 0;
            nout = 1;
            p++;
        } else {
            uint32_t cp;
            size_t n = utf8_decode(p, end, &cp);
            if (n == 0) return ND_E_UTF8;
            p += n;
            const nd_uc_rec *r = uc_lookup(cp);
            nout = r->n;
            alnum = r->alnum;
            if (nout == 1)
                outs[0] = (uint32_t)((int32_t)cp + r->delta);
            else
                for (unsigned i = 0; i < nout; i++) outs[i] = nd_uc_exp[r->exp][i];
        }
        for (unsigned i = 0; i < nout; i++) {
            if (!((alnum >> i) & 1)) {
                in_word = 0;
                continue;
            }
            if (!in_word && any) {
                if (o + 1 > out_cap) return ND_E_SPACE;
                out[o++] = ' ';
            }
            if (o + 4 > out_cap) {
                uint8_t tmp[4];
                size_t m = utf8_encode(outs[i], tmp);
                if (o + m > out_cap) return ND_E_SPACE;
                memcpy(out + o, tmp, m);
                o += m;
            } else {
                o += utf8_encode(outs[i], out + o);
            }
            in_word = 1;
            any = 1;
        }
    }
    if (o < out_cap) out[o] = 0;
    *out_len = o;
    return ND_OK;
}

/* ------------------------------------------------------------------ */
/* Band keys                                                            */

ND_EXPORT int nd_band_keys(const uint32_t *signatures, size_t n, uint32_t num_perm,
                           uint32_t bands, uint32_t rows, uint64_t *out) {
    if (num_perm < 1 || bands < 1 || rows < 1 || (uint64_t)bands * rows > num_perm) return ND_E_ARG;
    if (n > 0 && (signatures == NULL || out == NULL)) return ND_E_ARG;
    for (size_t i = 0; i < n; i++) {
        const uint32_t *s = signatures + i * num_perm;
        for (uint32_t j = 0; j < bands; j++) {
            uint64_t h = fmix64(0x8EBC6AF09C88C6E3ULL + (uint64_t)j * ND_M1 + rows);
            const uint32_t *v = s + (size_t)j * rows;
            uint32_t r = 0;
            for (; r + 2 <= rows; r += 2) {
                uint64_t pair = (uint64_t)v[r] | ((uint64_t)v[r + 1] << 32);
                h = (h ^ pair) * ND_M1;
                h ^= h >> 29;
            }
            if (r < rows) {
                h = (h ^ ((uint64_t)v[r] | (1ULL << 63))) * ND_M1;
                h ^= h >> 29;
            }
            out[i * bands + j] = fmix64(h ^ j);
        }
    }
    return ND_OK;
}

/* ------------------------------------------------------------------ */
/* Jaccard                                                              */

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

ND_EXPORT int nd_jaccard_many(const uint32_t *query, uint32_t nq, const uint32_t *values,
                              const uint64_t *offsets, size_t n, uint32_t fp_size,
                              double threshold, unsigned flags, double *out) {
    if (fp_size == 0 || (nq > 0 && query == NULL) || threshold != threshold) return ND_E_ARG;
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

/* ------------------------------------------------------------------ */
/* Compressed fingerprints (Elias-Fano, see neardup.h)                  */
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

static inline uint64_t ef_size(uint32_t count, unsigned l, uint32_t last) {
    if (count == 0) return 0;
    return 1 + ((uint64_t)count * l + 7) / 8 + ((((uint64_t)last >> l) + count) + 7) / 8;
}

static uint64_t ef_encode(const uint32_t *v, uint32_t count, uint8_t *out) {
    if (count == 0) return 0;
    uint32_t last = v[count - 1];
    unsigned l = ef_low_bits(count, last);
    uint64_t total = ef_size(count, l, last);
    memset(out, 0, total);
    out[0] = (uint8_t)l;
    uint8_t *low = out + 1;
    uint8_t *high = low + ((uint64_t)count * l + 7) / 8;
    uint64_t mask = l == 32 ? 0xFFFFFFFFull : ((1ull << l) - 1);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t bits = v[i] & mask, pos = (uint64_t)i * l;
        for (unsigned done = 0; done < l;) { /* byte by byte: never past the section */
            unsigned shift = (unsigned)(pos & 7), take = 8 - shift;
            if (take > l - done) take = l - done;
            low[pos >> 3] |= (uint8_t)(((bits >> done) & ((1u << take) - 1)) << shift);
            pos += take;
            done += take;
        }
        uint64_t hp = ((uint64_t)v[i] >> l) + i;
        high[hp >> 3] |= (uint8_t)(1u << (hp & 7));
    }
    return total;
}

static inline uint64_t load_le64(const uint8_t *p) {
    uint64_t x;
    memcpy(&x, p, sizeof x);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    x = __builtin_bswap64(x);
#endif
    return x;
}

/* Decodes one encoding of len bytes into count values; ND_OK or ND_E_DATA. */
static int ef_decode(const uint8_t *p, uint64_t len, uint32_t count, uint32_t *out) {
    if (count == 0) return len == 0 ? ND_OK : ND_E_DATA;
    if (count > ND_MAX_FP_SIZE || len < 2) return ND_E_DATA;
    unsigned l = p[0];
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
    return ND_OK;
}

ND_EXPORT int nd_fp_encode_batch(const uint32_t *values, const uint64_t *offsets, size_t n,
                                 uint8_t *out, uint64_t out_cap, uint64_t *out_offsets) {
    if (n == 0) {
        if (out_offsets != NULL) out_offsets[0] = 0;
        return ND_OK;
    }
    if (offsets == NULL || out_offsets == NULL) return ND_E_ARG;
    for (size_t i = 0; i < n; i++) {
        if (offsets[i + 1] < offsets[i] || offsets[i + 1] - offsets[i] > UINT32_MAX) return ND_E_ARG;
        if (values == NULL && offsets[i + 1] != offsets[i]) return ND_E_ARG;
        for (uint64_t j = offsets[i] + 1; j < offsets[i + 1]; j++)
            if (values[j] <= values[j - 1]) return ND_E_ARG;
    }
    uint64_t at = 0;
    out_offsets[0] = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t count = (uint32_t)(offsets[i + 1] - offsets[i]);
        const uint32_t *v = count ? values + offsets[i] : NULL;
        uint64_t need = count ? ef_size(count, ef_low_bits(count, v[count - 1]), v[count - 1]) : 0;
        if (need > out_cap - at || (need && out == NULL)) return ND_E_SPACE;
        at += ef_encode(v, count, out + at);
        out_offsets[i + 1] = at;
    }
    return ND_OK;
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
    if (fp_size == 0 || (nq > 0 && query == NULL) || threshold != threshold) return ND_E_ARG;
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

/* ------------------------------------------------------------------ */
/* Passage layouts: format 1 <-> format 2 (see neardup.h)              */

static inline uint32_t load_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void store_le32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

#define ND_LAYOUT_HEAD 12u

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
    if (size > out_cap) return ND_E_SPACE;
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

/* One text's layout into out (room for ND_LAYOUT_MAX bytes); the bytes written. */
static uint64_t layout_pack(const uint64_t *a_hashes, const int64_t *a_starts, uint64_t na,
                            const uint64_t *w_hashes, const int64_t *w_starts,
                            const int64_t *w_ends, uint64_t nw, uint8_t *out) {
    uint8_t *p = out + 12;
    for (uint64_t j = 0; j < na; j++, p += 4) store_le32(p, (uint32_t)a_hashes[j]);
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
        int big_gap = (int64_t)gap >= 15, big_len = (int64_t)len >= 15;
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

ND_EXPORT int nd_layout_pack_batch(const uint64_t *anchor_hashes, const int64_t *anchor_starts,
                                   uint64_t anchor_count, const uint64_t *anchor_offsets,
                                   const uint64_t *word_hashes, const int64_t *word_starts,
                                   const int64_t *word_ends, uint64_t word_count,
                                   const uint64_t *word_offsets, size_t n, uint8_t *out,
                                   uint64_t out_cap, uint64_t *out_offsets) {
    if (out_offsets == NULL) return ND_E_ARG;
    out_offsets[0] = 0;
    if (n == 0) return ND_OK;
    if (anchor_offsets == NULL || word_offsets == NULL) return ND_E_ARG;
    if ((anchor_count && (anchor_hashes == NULL || anchor_starts == NULL)) ||
        (word_count && (word_hashes == NULL || word_starts == NULL || word_ends == NULL)))
        return ND_E_ARG;
    if (anchor_offsets[n] > anchor_count || word_offsets[n] > word_count) return ND_E_ARG;
    for (size_t i = 0; i < n; i++) {
        if (anchor_offsets[i + 1] < anchor_offsets[i] || word_offsets[i + 1] < word_offsets[i])
            return ND_E_ARG;
        if (anchor_offsets[i + 1] - anchor_offsets[i] > UINT32_MAX ||
            word_offsets[i + 1] - word_offsets[i] > UINT32_MAX)
            return ND_E_ARG;
    }
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
