/* The text as the scanner sees it (see neardup.h), and the Unicode version of
 * its tables. */
#include "fold.h"

ND_EXPORT const char *nd_unicode_version(void) { return ND_UC_UNICODE_VERSION; }

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
