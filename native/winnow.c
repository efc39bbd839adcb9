/*
 * Winnowing (see neardup.h): the scanner (scan.h) with code point positions
 * tracked, into a sliding-window minimum. AVX2 compares find the next hash
 * that is not larger than the minimum, and the rightmost minimum of a window,
 * behind the run-time CPU check; the scalar twins define the result.
 */
#include "scan.h"


/* Shingles of a text pass through a linear buffer: the last `w` processed
 * entries stay (the window that can still reach back to them) and new ones are
 * appended after them; when it is full the selections are made over the new
 * entries and the last `w` are moved to the front. Moving costs w entries per
 * chunk of at least w, so at most one copy per shingle. */
#define ND_WIN_CHUNK 1024

struct nd_win {
    uint64_t *h;        /* shingle hashes, entries [0, len) */
    int64_t *s, *e;     /* the code points each covers */
    uint8_t *f;         /* and the ND_FOLD_* flags of its items */
    size_t len, cap;    /* cap = w + max(w, ND_WIN_CHUNK) */
    size_t done;        /* entries [0, done) have been through the window */
    size_t cur;         /* the current window's rightmost minimum (once a window is full) */
    uint64_t base;      /* shingles of this text dropped off the front */
    uint32_t w;
    int robust; /* tokenizer 2's words: a tie keeps the selection (see win_run) */
    unsigned simd;
    uint64_t *oh;       /* the caller's outputs */
    int64_t *os, *oe;
    uint8_t *of;        /* may be NULL */
    uint64_t olen, ocap;
    int err;
};

/* A winnowing call's state: the scanner's parameters, then the window. */
typedef struct {
    nd_scan scan; /* first: scan_emit casts back */
    struct nd_win *win;
} nd_wctx;

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
    if (v->of != NULL) v->of[v->olen] = v->f[i];
    v->olen++;
}

/* Windows ending at the entries [done, len). The current minimum is replaced
 * by the first later entry that is not larger (rightmost on ties; robust: that
 * is smaller), or, when
 * it leaves the window first, by the rightmost minimum of the window then.
 * Either way the selection moves, so each replacement is a new selection. */
static void win_run(struct nd_win *v) {
    size_t i = v->done, len = v->len, w = v->w;
    /* no full window yet (robust, w == 1: the first window is not found by the
     * minimum matching itself below) */
    if (v->base + i < w - 1 || (v->robust && v->base + i == w - 1)) {
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
        /* robust winnowing (the paper's section 4.2, tokenizer 2's words): only
         * a smaller hash replaces the minimum while it is in the window, so a run
         * of equal hashes (a letter repeated) selects once per window */
        uint64_t m = v->h[v->cur];
        size_t j = !v->robust ? find_le(v, i, stop, m) : m == 0 ? stop : find_le(v, i, stop, m - 1);
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

static void win_push(struct nd_win *v, uint64_t h, int64_t start, int64_t end, unsigned f) {
    if (ND_UNLIKELY(v->err)) return;
    size_t i = v->len++;
    v->h[i] = h;
    v->s[i] = start;
    v->e[i] = end;
    v->f[i] = (uint8_t)f;
    if (ND_UNLIKELY(v->len == v->cap)) {
        win_run(v);
        if (v->err) return;
        /* cur is within the last w entries: the window of the last one holds it */
        size_t drop = v->len - v->w;
        memmove(v->h, v->h + drop, v->w * sizeof *v->h);
        memmove(v->s, v->s + drop, v->w * sizeof *v->s);
        memmove(v->e, v->e + drop, v->w * sizeof *v->e);
        memmove(v->f, v->f + drop, v->w * sizeof *v->f);
        v->base += drop;
        v->cur -= drop;
        v->len = v->done = v->w;
    }
}

static inline void scan_put(nd_scan *c, uint32_t cp) { /* MODE_TEXT is nd_normalize's */
    (void)c;
    (void)cp;
}

/* The scanner's shingles go straight into the window. */
static inline void scan_emit(nd_scan *c, nd_roll *r, uint64_t h, int64_t s, int64_t e,
                             unsigned f) {
    (void)r;
    win_push(((nd_wctx *)c)->win, h, s, e, f);
}

#if ND_X86
__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *scan_words_avx2_spans(
    nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end) {
    return scan_words_avx2(c, r, w, p, end, MODE_WORD | MODE_SPANS);
}

__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *scan_words_avx2_spans2(
    nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end) {
    return scan_words_avx2(c, r, w, p, end, MODE_WORD | MODE_SPANS | MODE_V2);
}

__attribute__((target("avx2,bmi,bmi2"))) static const uint8_t *scan_words_avx2_spans3(
    nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end) {
    return scan_words_avx2(c, r, w, p, end, MODE_WORD | MODE_SPANS | MODE_V2 | MODE_V3);
}
#endif

/* One text through the scanner; mode is a constant at each call in winnow_one. NULL on
 * invalid UTF-8. */
__attribute__((always_inline)) static inline const uint8_t *winnow_scan(nd_wctx *c, nd_roll *r,
                                                                        nd_word *w,
                                                                        const uint8_t *p,
                                                                        size_t len, int mode) {
    if (MODE_KIND(mode) == MODE_CHAR) return scan_scalar(&c->scan, r, w, mode, p, p + len, p + len);
    const uint8_t *q;
#if ND_X86
    if (c->win->simd & ND_SIMD_AVX2)
        q = MODE_IS_V3(mode)   ? scan_words_avx2_spans3(&c->scan, r, w, p, p + len)
            : MODE_IS_V2(mode) ? scan_words_avx2_spans2(&c->scan, r, w, p, p + len)
                               : scan_words_avx2_spans(&c->scan, r, w, p, p + len);
    else
#endif
        q = scan_scalar(&c->scan, r, w, mode, p, p + len, p + len);
    if (q != NULL && w->in_word) word_end(&c->scan, r, w, mode);
    return q;
}

/* The text's last windows; a text with fewer shingles than w has one window
 * of all of them. */
static void win_finish(struct nd_win *v) {
    if (v->err) return;
    win_run(v);
    if (v->base + v->len < v->w && v->len > 0) win_select(v, argmin_right(v, 0, v->len));
}

static int winnow_one(nd_wctx *c, struct nd_win *v, const uint8_t *p, size_t len, int kind,
                      int tokenizer) {
    v->len = v->done = v->cur = 0;
    v->base = 0;
    v->err = ND_OK;
    nd_roll r;
    r.S = 0;
    r.n = 0;
    r.nh = 0;
    r.emitted = 0;
    memset(r.ring, 0, sizeof r.ring);
    nd_word w = {.h = c->scan.word_seed};
    const uint8_t *q = p;
    const int spans = MODE_SPANS, v2 = MODE_SPANS | MODE_V2, v3 = v2 | MODE_V3;
    if (len > 0 && tokenizer >= ND_TOKENIZER_3) { /* 4: on its own table (scan.v4) */
        q = kind == ND_SHINGLE_WORD ? winnow_scan(c, &r, &w, p, len, MODE_WORD | v3)
                                    : winnow_scan(c, &r, &w, p, len, MODE_CHAR | v3);
    } else if (len > 0) {
        if (kind == ND_SHINGLE_WORD)
            q = tokenizer == ND_TOKENIZER_2 ? winnow_scan(c, &r, &w, p, len, MODE_WORD | v2)
                                            : winnow_scan(c, &r, &w, p, len, MODE_WORD | spans);
        else
            q = tokenizer == ND_TOKENIZER_2 ? winnow_scan(c, &r, &w, p, len, MODE_CHAR | v2)
                                            : winnow_scan(c, &r, &w, p, len, MODE_CHAR | spans);
    }
    if (q == NULL) return ND_E_UTF8;
    win_finish(v);
    return v->err;
}

ND_EXPORT int nd_winnow_batch(const uint8_t *data, const uint64_t *offsets, size_t n,
                              int shingle_kind, int tokenizer, uint32_t k, uint32_t window,
                              uint64_t seed, unsigned flags, uint64_t *hashes, int64_t *starts,
                              int64_t *ends, uint64_t cap, uint64_t *sel_offsets, int32_t *status,
                              uint8_t *folds) {
    if ((shingle_kind != ND_SHINGLE_WORD && shingle_kind != ND_SHINGLE_CHAR) ||
        (tokenizer < ND_TOKENIZER_1 || tokenizer > ND_TOKENIZER_4) || k < 1 ||
        k > ND_MAX_K || window < 1 || window > ND_MAX_WINDOW || sel_offsets == NULL ||
        (cap > 0 && (hashes == NULL || starts == NULL || ends == NULL)))
        return ND_E_ARG;
    sel_offsets[0] = 0;
    if (n == 0) return ND_OK;
    if (offsets == NULL || status == NULL || (data == NULL && offsets[n] != offsets[0]))
        return ND_E_ARG;
    for (size_t i = 0; i < n; i++)
        if (offsets[i + 1] < offsets[i]) return ND_E_ARG;

    nd_wctx c;
    memset(&c, 0, sizeof c);
    scan_hashing(&c.scan, shingle_kind, k, seed);
    if (!scan_unspaced_args(&c.scan, tokenizer, shingle_kind, k, flags)) return ND_E_ARG;
    struct nd_win v;
    memset(&v, 0, sizeof v);
    c.win = &v;
    v.w = window;
    v.robust = c.scan.kc != 0;
    v.cap = (size_t)window + (window > ND_WIN_CHUNK ? window : ND_WIN_CHUNK);
    v.simd = nd_active(flags);
    v.oh = hashes;
    v.os = starts;
    v.oe = ends;
    v.of = folds;
    v.ocap = cap;
    v.h = (uint64_t *)malloc(v.cap * sizeof *v.h);
    v.s = (int64_t *)malloc(v.cap * sizeof *v.s);
    v.e = (int64_t *)malloc(v.cap * sizeof *v.e);
    v.f = (uint8_t *)malloc(v.cap * sizeof *v.f);
    int ret = ND_OK;
    if (v.h == NULL || v.s == NULL || v.e == NULL || v.f == NULL) {
        ret = ND_E_NOMEM;
        for (size_t i = 0; i < n; i++) {
            status[i] = ND_E_NOMEM;
            sel_offsets[i + 1] = 0;
        }
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        const uint8_t *p = data ? data + offsets[i] : NULL;
        int rc = winnow_one(&c, &v, p, (size_t)(offsets[i + 1] - offsets[i]), shingle_kind,
                            tokenizer);
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
    free(v.f);
    return ret;
}
