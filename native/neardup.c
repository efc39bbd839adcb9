/*
 * neardup kernel. See neardup.h for the contract; the design notes live in
 * README.md and ../shared/design.md. In short, per text, in one pass over its
 * bytes:
 *
 *   UTF-8 decode (strict) -> case fold + alnum test (two-stage tables made by
 *   gen_unicode.py) -> per-word 64-bit hash, fed 8 folded bytes at a time ->
 *   rolling polynomial over the last K word hashes -> fmix64 -> shingle hash H
 *   -> exact distinct set (open addressing) -> for each new H:
 *        one-permutation MinHash bin update (bin from low 32 bits, value =
 *        high 32 bits) and a bounded bottom-N candidate buffer.
 *
 * SIMD: an AVX2 ASCII scanner (classify + fold 32 bytes per step) and the
 * SSE4.2 pcmpestrm block skip in the Jaccard merge. Both sit in target
 * regions behind a run-time CPU check and produce exactly what the scalar
 * code produces: the scalar code defines the result.
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
    if (__builtin_cpu_supports("sse4.2")) lv |= ND_SIMD_SSE42;
    if (__builtin_cpu_supports("avx2")) lv |= ND_SIMD_AVX2;
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

typedef struct {
    /* distinct shingle set: open addressing, 0 = empty slot */
    uint64_t *tab;
    size_t tab_alloc; /* slots allocated */
    size_t mask;      /* slots in use for this text - 1 */
    size_t used, limit;
    int has_zero;
    uint64_t count;
    /* one-permutation MinHash */
    uint32_t *sig; /* caller's row */
    uint8_t *filled;
    uint32_t num_perm;
    /* bottom-N candidates */
    uint32_t *fp;  /* 2 * fp_size */
    uint32_t *tmp; /* 2 * fp_size, radix sort scratch */
    uint32_t fpn, fp_size;
    uint64_t cut; /* accept v < cut */
    int err;
    /* rolling shingle state */
    uint32_t k;
    uint64_t bk1; /* B^(K-1) */
    uint64_t S;
    uint64_t ring[ND_MAX_K];
    uint32_t ring_pos;
    uint64_t nitems; /* words (or code points) rolled in */
    uint64_t shingle_seed;
    /* current word hash (word mode) */
    uint64_t wh, wacc, wlen, word_seed;
    uint32_t wnacc;
    int in_word;
    uint64_t nwords;
    uint64_t char_seed;
} nd_ctx;

static void radix_sort_u32(uint32_t *a, uint32_t *tmp, uint32_t n) {
    if (n < 48) {
        for (uint32_t i = 1; i < n; i++) {
            uint32_t x = a[i];
            uint32_t j = i;
            while (j > 0 && a[j - 1] > x) {
                a[j] = a[j - 1];
                j--;
            }
            a[j] = x;
        }
        return;
    }
    uint32_t hist[4][256];
    memset(hist, 0, sizeof hist);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t x = a[i];
        hist[0][x & 0xFF]++;
        hist[1][(x >> 8) & 0xFF]++;
        hist[2][(x >> 16) & 0xFF]++;
        hist[3][x >> 24]++;
    }
    uint32_t *src = a, *dst = tmp;
    for (int pass = 0; pass < 4; pass++) {
        uint32_t *h = hist[pass];
        unsigned shift = (unsigned)pass * 8;
        if (h[(src[0] >> shift) & 0xFF] == n) continue; /* all share this digit */
        uint32_t sum = 0;
        for (int d = 0; d < 256; d++) {
            uint32_t c = h[d];
            h[d] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++) {
            uint32_t x = src[i];
            dst[h[(x >> shift) & 0xFF]++] = x;
        }
        uint32_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != a) memcpy(a, src, (size_t)n * sizeof *a);
}

/* sort + dedupe the candidate buffer, keep at most fp_size, set the cut */
static void fp_compact(nd_ctx *c) {
    uint32_t n = c->fpn;
    if (n == 0) return;
    radix_sort_u32(c->fp, c->tmp, n);
    uint32_t m = 1;
    for (uint32_t i = 1; i < n && m < c->fp_size; i++)
        if (c->fp[i] != c->fp[m - 1]) c->fp[m++] = c->fp[i];
    c->fpn = m;
    if (m == c->fp_size) c->cut = c->fp[m - 1];
}

static int set_grow(nd_ctx *c) {
    size_t old_slots = c->mask + 1;
    size_t slots = old_slots * 2;
    uint64_t *nt = (uint64_t *)calloc(slots, sizeof *nt);
    if (nt == NULL) return ND_E_NOMEM;
    size_t nmask = slots - 1;
    for (size_t i = 0; i < old_slots; i++) {
        uint64_t h = c->tab[i];
        if (h == 0) continue;
        size_t j = (size_t)h & nmask;
        while (nt[j] != 0) j = (j + 1) & nmask;
        nt[j] = h;
    }
    free(c->tab);
    c->tab = nt;
    c->tab_alloc = slots;
    c->mask = nmask;
    c->limit = slots / 2;
    return ND_OK;
}

/* one shingle hash: dedupe, then signature bin and bottom-N candidate */
static inline void add_shingle(nd_ctx *c, uint64_t h) {
    if (ND_UNLIKELY(c->err)) return; /* out of memory: the text is failed anyway */
    if (ND_UNLIKELY(h == 0)) {
        if (c->has_zero) return;
        c->has_zero = 1;
    } else {
        uint64_t *tab = c->tab;
        size_t mask = c->mask;
        size_t i = (size_t)h & mask;
        for (;;) {
            uint64_t t = tab[i];
            if (t == h) return;
            if (t == 0) break;
            i = (i + 1) & mask;
        }
        tab[i] = h;
        if (ND_UNLIKELY(++c->used > c->limit)) {
            if (set_grow(c) != ND_OK) {
                c->err = ND_E_NOMEM;
                return;
            }
        }
    }
    c->count++;
    uint32_t v = (uint32_t)(h >> 32);
    uint32_t bin = (uint32_t)(((uint64_t)(uint32_t)h * c->num_perm) >> 32);
    c->filled[bin] = 1;
    if (v < c->sig[bin]) c->sig[bin] = v;
    if (v < c->cut) {
        c->fp[c->fpn++] = v;
        if (ND_UNLIKELY(c->fpn == 2 * c->fp_size)) fp_compact(c);
    }
}

/* roll one item hash (word or code point) into the K-window */
static inline void roll(nd_ctx *c, uint64_t x) {
    uint32_t k = c->k;
    uint64_t S = c->S;
    if (c->nitems >= k) S -= c->ring[c->ring_pos] * c->bk1;
    S = S * ND_B + x;
    c->S = S;
    c->ring[c->ring_pos] = x;
    if (++c->ring_pos == k) c->ring_pos = 0;
    if (++c->nitems >= k) add_shingle(c, fmix64(S ^ c->shingle_seed));
}

static inline void roll_finish(nd_ctx *c) {
    if (c->nitems > 0 && c->nitems < c->k) add_shingle(c, fmix64(c->S ^ c->shingle_seed));
}

/* word hash: folded UTF-8 bytes, 8 at a time, little endian, zero padded */
static inline void word_byte(nd_ctx *c, uint8_t b) {
    c->wacc |= (uint64_t)b << (8 * c->wnacc);
    c->wlen++;
    if (++c->wnacc == 8) {
        c->wh = (c->wh ^ c->wacc) * ND_M1;
        c->wacc = 0;
        c->wnacc = 0;
    }
}

static inline void word_end(nd_ctx *c) {
    uint64_t h = c->wh;
    if (c->wnacc) h = (h ^ c->wacc) * ND_M1;
    roll(c, fmix64(h + c->wlen));
    c->wh = c->word_seed;
    c->wacc = 0;
    c->wnacc = 0;
    c->wlen = 0;
}

static inline uint64_t char_hash(const nd_ctx *c, uint32_t cp) {
    return fmix64(((uint64_t)cp + 1) * ND_M1 ^ c->char_seed);
}

enum { MODE_WORD = 0, MODE_CHAR = 1 };

/* one folded output code point; alnum says whether it belongs to a word */
static inline void emit_cp(nd_ctx *c, int mode, uint32_t cp, int alnum) {
    if (!alnum) {
        if (c->in_word) {
            c->in_word = 0;
            c->nwords++;
            if (mode == MODE_WORD) word_end(c);
        }
        return;
    }
    if (mode == MODE_WORD) {
        uint8_t buf[4];
        size_t n = utf8_encode(cp, buf);
        for (size_t i = 0; i < n; i++) word_byte(c, buf[i]);
    } else {
        if (!c->in_word && c->nwords > 0) roll(c, char_hash(c, 0x20));
        roll(c, char_hash(c, cp));
    }
    c->in_word = 1;
}

/* decode + fold one non-ASCII sequence; returns bytes consumed, 0 = invalid */
static inline size_t scan_nonascii(nd_ctx *c, int mode, const uint8_t *p, const uint8_t *end) {
    uint32_t cp;
    size_t n = utf8_decode(p, end, &cp);
    if (n == 0) return 0;
    const nd_uc_rec *r = uc_lookup(cp);
    if (ND_LIKELY(r->n == 1)) {
        emit_cp(c, mode, (uint32_t)((int32_t)cp + r->delta), r->alnum & 1);
    } else {
        const uint32_t *x = nd_uc_exp[r->exp];
        for (unsigned i = 0; i < r->n; i++) emit_cp(c, mode, x[i], (r->alnum >> i) & 1);
    }
    return n;
}

/* Scalar scanner: the reference for every path. */
static inline int scan_scalar(nd_ctx *c, int mode, const uint8_t *p, const uint8_t *end) {
    while (p < end) {
        uint8_t b = *p;
        if (b < 0x80) {
            uint8_t f = nd_ascii_fold[b];
            if (mode == MODE_WORD) {
                if (f) {
                    c->in_word = 1;
                    word_byte(c, f);
                } else if (c->in_word) {
                    c->in_word = 0;
                    c->nwords++;
                    word_end(c);
                }
            } else {
                emit_cp(c, mode, f, f != 0);
            }
            p++;
            continue;
        }
        size_t n = scan_nonascii(c, mode, p, end);
        if (n == 0) return ND_E_UTF8;
        p += n;
    }
    return ND_OK;
}

#if ND_X86
/* AVX2 word-mode scanner for ASCII stretches: classify and fold 32 bytes at
 * a time, then walk the word spans with bit scans. Words are hashed exactly
 * as word_byte/word_end would hash them; a block with any byte >= 0x80 is
 * handed to the scalar code byte by byte. */
__attribute__((target("avx2,bmi,bmi2"))) static int scan_word_avx2(nd_ctx *c, const uint8_t *p,
                                                                   const uint8_t *end) {
    uint8_t folded[40];
    while ((size_t)(end - p) >= 32) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)p);
        if (ND_UNLIKELY(_mm256_movemask_epi8(x) != 0)) {
            /* non-ASCII somewhere: scalar up to the first such byte, then one sequence */
            uint32_t hi = (uint32_t)_mm256_movemask_epi8(x);
            const uint8_t *stop = p + __builtin_ctz(hi);
            int rc = scan_scalar(c, MODE_WORD, p, stop);
            if (rc != ND_OK) return rc;
            size_t n = scan_nonascii(c, MODE_WORD, stop, end);
            if (n == 0) return ND_E_UTF8;
            p = stop + n;
            continue;
        }
        /* lower-case A-Z, mark [0-9a-z] */
        __m256i up = _mm256_and_si256(_mm256_cmpgt_epi8(x, _mm256_set1_epi8('A' - 1)),
                                      _mm256_cmpgt_epi8(_mm256_set1_epi8('Z' + 1), x));
        __m256i lo = _mm256_or_si256(x, _mm256_and_si256(up, _mm256_set1_epi8(0x20)));
        __m256i isl = _mm256_and_si256(_mm256_cmpgt_epi8(lo, _mm256_set1_epi8('a' - 1)),
                                       _mm256_cmpgt_epi8(_mm256_set1_epi8('z' + 1), lo));
        __m256i isd = _mm256_and_si256(_mm256_cmpgt_epi8(x, _mm256_set1_epi8('0' - 1)),
                                       _mm256_cmpgt_epi8(_mm256_set1_epi8('9' + 1), x));
        uint32_t m = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(isl, isd));
        _mm256_storeu_si256((__m256i *)(void *)folded, lo);
        memset(folded + 32, 0, 8);
        uint32_t pos = 0;
        while (pos < 32) {
            uint32_t rest = m >> pos; /* pos < 32 */
            if (c->in_word) {
                /* run of word bytes from pos */
                /* bits above 31 - pos are 0 in rest, so this is <= 32 - pos */
                uint32_t run = (uint32_t)__builtin_ctzll(~(uint64_t)rest);
                /* push run bytes: fill the pending chunk, then whole chunks */
                const uint8_t *src = folded + pos;
                uint32_t left = run;
                while (left > 0) {
                    uint32_t room = 8 - c->wnacc;
                    uint32_t take = left < room ? left : room;
                    uint64_t chunk;
                    memcpy(&chunk, src, 8);
                    if (take < 8) chunk &= (1ULL << (8 * take)) - 1;
                    c->wacc |= chunk << (8 * c->wnacc);
                    c->wnacc += take;
                    c->wlen += take;
                    if (c->wnacc == 8) {
                        c->wh = (c->wh ^ c->wacc) * ND_M1;
                        c->wacc = 0;
                        c->wnacc = 0;
                    }
                    src += take;
                    left -= take;
                }
                pos += run;
                if (pos < 32) {
                    c->in_word = 0;
                    c->nwords++;
                    word_end(c);
                }
            } else {
                if (rest == 0) break;
                pos += (uint32_t)__builtin_ctz(rest);
                c->in_word = 1;
            }
        }
        p += 32;
    }
    return scan_scalar(c, MODE_WORD, p, end);
}
#endif

/* ------------------------------------------------------------------ */
/* Sketch                                                               */

static void densify(nd_ctx *c, uint64_t seed) {
    uint32_t np = c->num_perm;
    uint64_t dseed = seed_part(seed, 4);
    for (uint32_t i = 0; i < np; i++) {
        if (c->filled[i]) continue;
        uint32_t attempt = 0;
        for (;;) {
            if (ND_UNLIKELY(attempt >= 64u * np)) {
                /* practically unreachable: fall back to the next filled bin */
                uint32_t j = i;
                do j = (j + 1 == np) ? 0 : j + 1;
                while (!c->filled[j]);
                c->sig[i] = c->sig[j];
                break;
            }
            uint64_t x = fmix64(dseed ^ (((uint64_t)i << 32) | attempt));
            uint32_t j = (uint32_t)(((x & 0xFFFFFFFFULL) * np) >> 32);
            if (c->filled[j]) {
                c->sig[i] = c->sig[j];
                break;
            }
            attempt++;
        }
    }
}

static int sketch_one(nd_ctx *c, const uint8_t *p, size_t len, int kind, uint64_t seed,
                      unsigned simd, uint32_t *fp_out, uint32_t *fp_len) {
    /* size the set for this text: at most one shingle per 2 bytes (words) */
    size_t est = kind == ND_SHINGLE_WORD ? len / 5 + 16 : len + 16;
    size_t slots = 64;
    while (slots < 2 * est && slots < ((size_t)1 << 22)) slots <<= 1;
    if (slots > c->tab_alloc) {
        free(c->tab);
        c->tab = (uint64_t *)malloc(slots * sizeof *c->tab);
        c->tab_alloc = c->tab ? slots : 0;
        if (c->tab == NULL) return ND_E_NOMEM;
    }
    memset(c->tab, 0, slots * sizeof *c->tab);
    c->mask = slots - 1;
    c->used = 0;
    c->limit = slots / 2;
    c->has_zero = 0;
    c->count = 0;
    c->err = 0;
    for (uint32_t i = 0; i < c->num_perm; i++) c->sig[i] = 0xFFFFFFFFu;
    memset(c->filled, 0, c->num_perm);
    c->fpn = 0;
    c->cut = 1ULL << 32;
    c->S = 0;
    c->ring_pos = 0;
    c->nitems = 0;
    c->wh = c->word_seed;
    c->wacc = 0;
    c->wnacc = 0;
    c->wlen = 0;
    c->in_word = 0;
    c->nwords = 0;

    int rc = ND_OK;
    if (len == 0) {
        /* nothing to scan */
    } else if (kind == ND_SHINGLE_WORD) {
#if ND_X86
        if (simd & ND_SIMD_AVX2)
            rc = scan_word_avx2(c, p, p + len);
        else
#endif
            rc = scan_scalar(c, MODE_WORD, p, p + len);
        if (rc == ND_OK && c->in_word) {
            c->in_word = 0;
            c->nwords++;
            word_end(c);
        }
    } else {
        rc = scan_scalar(c, MODE_CHAR, p, p + len);
    }
    if (rc == ND_OK) {
        roll_finish(c);
        rc = c->err;
    }
    if (rc != ND_OK) {
        for (uint32_t i = 0; i < c->num_perm; i++) c->sig[i] = 0xFFFFFFFFu;
        *fp_len = 0;
        c->count = 0;
        return rc;
    }
    fp_compact(c);
    memcpy(fp_out, c->fp, (size_t)c->fpn * sizeof *fp_out);
    *fp_len = c->fpn;
    if (c->count > 0) densify(c, seed);
    return ND_OK;
}

ND_EXPORT int nd_sketch_batch(const uint8_t *data, const uint64_t *offsets, size_t n,
                              int shingle_kind, uint32_t k, uint32_t num_perm, uint32_t fp_size,
                              uint64_t seed, unsigned flags, uint32_t *signatures,
                              uint32_t *fingerprints, uint32_t *fp_len, uint64_t *shingles,
                              int32_t *status) {
    if ((shingle_kind != ND_SHINGLE_WORD && shingle_kind != ND_SHINGLE_CHAR) || k < 1 ||
        k > ND_MAX_K || num_perm < 1 || num_perm > ND_MAX_NUM_PERM || fp_size < 1 ||
        fp_size > ND_MAX_FP_SIZE)
        return ND_E_ARG;
    if (n == 0) return ND_OK;
    if (offsets == NULL || signatures == NULL || fingerprints == NULL || fp_len == NULL ||
        shingles == NULL || status == NULL || (data == NULL && offsets[n] != offsets[0]))
        return ND_E_ARG;
    for (size_t i = 0; i < n; i++)
        if (offsets[i + 1] < offsets[i]) return ND_E_ARG;

    nd_ctx c;
    memset(&c, 0, sizeof c);
    c.num_perm = num_perm;
    c.fp_size = fp_size;
    c.k = k;
    c.bk1 = 1;
    for (uint32_t i = 1; i < k; i++) c.bk1 *= ND_B;
    c.shingle_seed = seed_part(seed, 1) ^ ((uint64_t)shingle_kind << 8 | k);
    c.word_seed = seed_part(seed, 2);
    c.char_seed = seed_part(seed, 3);
    c.filled = (uint8_t *)malloc(num_perm);
    c.fp = (uint32_t *)malloc(2 * (size_t)fp_size * sizeof(uint32_t));
    c.tmp = (uint32_t *)malloc(2 * (size_t)fp_size * sizeof(uint32_t));
    int ret = ND_OK;
    if (c.filled == NULL || c.fp == NULL || c.tmp == NULL) {
        ret = ND_E_NOMEM;
        for (size_t i = 0; i < n; i++) status[i] = ND_E_NOMEM;
        goto done;
    }
    unsigned simd = nd_active(flags);
    for (size_t i = 0; i < n; i++) {
        c.sig = signatures + i * num_perm;
        const uint8_t *p = data ? data + offsets[i] : NULL;
        size_t len = (size_t)(offsets[i + 1] - offsets[i]);
        int rc = sketch_one(&c, p, len, shingle_kind, seed, simd, fingerprints + i * fp_size,
                            &fp_len[i]);
        status[i] = rc;
        shingles[i] = rc == ND_OK ? c.count : 0;
        if (rc == ND_E_NOMEM) {
            ret = ND_E_NOMEM;
            for (size_t j = i + 1; j < n; j++) status[j] = ND_E_NOMEM;
            break;
        }
    }
done:
    free(c.tab);
    free(c.filled);
    free(c.fp);
    free(c.tmp);
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
    uint32_t lo = 0, len = n;
    while (len > 0) {
        uint32_t half = len / 2;
        if (a[lo + half] <= tau) {
            lo += half + 1;
            len -= half + 1;
        } else {
            len = half;
        }
    }
    return lo;
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
    if (*na && a[*na - 1] > tau) *na = count_le(a, *na, tau);
    if (*nb && b[*nb - 1] > tau) *nb = count_le(b, *nb, tau);
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
        i += amax <= bmax ? 8 : 0;
        j += bmax <= amax ? 8 : 0;
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

ND_EXPORT double nd_jaccard(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
                            uint32_t fp_size, unsigned flags) {
    if (fp_size == 0 || (na > 0 && a == NULL) || (nb > 0 && b == NULL)) return (double)ND_E_ARG;
    jaccard_bounds(a, &na, b, &nb, fp_size);
    uint32_t inter = intersect(a, na, b, nb, 0, nd_active(flags));
    return jaccard_ratio(inter, na, nb);
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
    for (size_t i = 0; i < n; i++) {
        const uint32_t *b = values ? values + offsets[i] : NULL;
        uint32_t na = nq, nb = (uint32_t)(offsets[i + 1] - offsets[i]);
        jaccard_bounds(query, &na, b, &nb, fp_size);
        uint32_t need = min_intersection(na, nb, threshold);
        double r = 0.0;
        if (need != UINT32_MAX) {
            uint32_t inter = intersect(query, na, b, nb, need, simd);
            if (inter != UINT32_MAX) {
                r = jaccard_ratio(inter, na, nb);
                if (r < threshold) r = 0.0;
            }
        }
        out[i] = r;
    }
    return ND_OK;
}
