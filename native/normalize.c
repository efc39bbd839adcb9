/* The text as the scanner sees it (see neardup.h), and the versions of its
 * tables. Tokenizer 1 has its own loop here (what it writes is fixed); 2 and 3 run
 * the scanner itself in MODE_TEXT, so that the hyphen joining is the one the
 * hashes see. */
#include "scan.h"

ND_EXPORT const char *nd_unicode_version(void) { return ND_UC_UNICODE_VERSION; }

ND_EXPORT const char *nd_confusables_version(void) { return ND_UC2_CONFUSABLES; }

ND_EXPORT size_t nd_normalize_bound(size_t len, int tokenizer) {
    if (tokenizer == ND_TOKENIZER_1) return 3 * len + 1; /* folding: up to 3 per code point */
    if (tokenizer == ND_TOKENIZER_2) return ND_UC2_GROWTH * len + 1;
    if (tokenizer == ND_TOKENIZER_3) return ND_UC3_GROWTH * len + 1;
    if (tokenizer == ND_TOKENIZER_4) return ND_UC4_GROWTH * len + 1;
    return 0;
}

/* MODE_TEXT's sink: the caller's buffer */
typedef struct {
    nd_scan scan; /* first: scan_put casts back */
    uint8_t *out;
    size_t len, cap;
    int err;
} nd_tctx;

static inline void scan_emit(nd_scan *c, nd_roll *r, uint64_t h, int64_t s, int64_t e,
                             unsigned f) { /* not reached in MODE_TEXT */
    (void)c, (void)r, (void)h, (void)s, (void)e, (void)f;
}

static inline void scan_put(nd_scan *c, uint32_t cp) {
    nd_tctx *t = (nd_tctx *)c;
    uint8_t tmp[4];
    size_t m = utf8_encode(cp, tmp);
    if (m > t->cap - t->len) {
        t->err = ND_E_SPACE;
        return;
    }
    memcpy(t->out + t->len, tmp, m);
    t->len += m;
}

/* tokenizers 2, 3 and 4 */
static int normalize2(const uint8_t *text, size_t len, uint8_t *out, size_t out_cap,
                      size_t *out_len, int tokenizer) {
    nd_tctx t;
    memset(&t, 0, sizeof t);
    int v3 = tokenizer >= ND_TOKENIZER_3;
    t.scan.v4 = tokenizer == ND_TOKENIZER_4;
    t.out = out;
    t.cap = out_cap;
    nd_roll r;
    memset(&r, 0, sizeof r);
    nd_word w;
    memset(&w, 0, sizeof w);
    const uint8_t *q = text + len;
    if (len > 0)
        q = v3 ? scan_scalar(&t.scan, &r, &w, MODE_CHAR | MODE_V2 | MODE_V3 | MODE_TEXT, text,
                             text + len, text + len)
               : scan_scalar(&t.scan, &r, &w, MODE_CHAR | MODE_V2 | MODE_TEXT, text, text + len,
                             text + len);
    if (q == NULL) return ND_E_UTF8;
    if (t.err) return t.err;
    if (t.len < out_cap) out[t.len] = 0;
    *out_len = t.len;
    return ND_OK;
}

ND_EXPORT int nd_normalize(const uint8_t *text, size_t len, int tokenizer, uint8_t *out,
                           size_t out_cap, size_t *out_len) {
    if ((text == NULL && len > 0) || out == NULL || out_len == NULL) return ND_E_ARG;
    if (tokenizer >= ND_TOKENIZER_2 && tokenizer <= ND_TOKENIZER_4) {
        *out_len = 0;
        return normalize2(text, len, out, out_cap, out_len, tokenizer);
    }
    if (tokenizer != ND_TOKENIZER_1) return ND_E_ARG;
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
