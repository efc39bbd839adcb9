/*
 * The scanner (tokenizer), an internal header: sketch.c and winnow.c include
 * it, so that it is inlined into each with the mode a constant. Per text, in
 * one pass over its bytes:
 *
 *   UTF-8 decode (strict) -> case fold + alnum test (two-stage tables made by
 *   gen_unicode.py) -> per-word 64-bit hash, fed 8 folded bytes at a time ->
 *   rolling polynomial over the last K word hashes (O(1) per shingle) ->
 *   (tokenizers 2 to 4, words: a letter of a script written without spaces is a
 *   token of its own, and a shingle ending at one is kc tokens long) ->
 *   fmix64 -> shingle hash H -> scan_emit, which the including file defines
 *   (the sketch: its distinct set and signature; winnowing: its window).
 *
 * SIMD: an AVX2 scanner for ASCII (classify + fold 64 bytes per step, words
 * found with bit scans and hashed straight from the folded block), in a target
 * region behind the run-time CPU check; it produces exactly what the scalar
 * scanner produces, which defines the result (the tests compare them).
 */
#ifndef NEARDUP_SCAN_H
#define NEARDUP_SCAN_H

#include "fold.h"


/* The hashing parameters of a call: the same for sketching and winnowing,
 * which is what makes their shingle hashes the same. The including file's own
 * state starts with one of these (scan_emit gets it back by a cast). */
typedef struct {
    uint32_t k;
    uint64_t bk1; /* B^(K-1) */
    uint64_t shingle_seed, word_seed, char_seed;
    /* tokenizer 2's words (scan_unspaced): each letter of a script written
     * without spaces is a token, and a shingle ending at one is kc tokens
     * long; bk and bkc are B^K and B^kc. 0 with tokenizer 1 and char shingles. */
    uint32_t kc;
    uint64_t bk, bkc;
    /* tokenizer 4: MODE_V3's scanner on tokenizer 4's table (a run-time choice:
     * only code points past ASCII look it up, and it spares a second copy of
     * every MODE_V3 loop) */
    int v4;
} nd_scan;

static inline void scan_hashing(nd_scan *c, int kind, uint32_t k, uint64_t seed) {
    c->k = k;
    c->bk1 = 1;
    for (uint32_t i = 1; i < k; i++) c->bk1 *= ND_B;
    c->shingle_seed = seed_part(seed, 1) ^ ((uint64_t)kind << 8 | k);
    c->word_seed = seed_part(seed, 2);
    c->char_seed = seed_part(seed, 3);
}

/* The K of a shingle that ends at a letter of an unspaced script (tokenizer 2,
 * word shingles; 1 <= kc <= ND_MAX_K). */
static inline void scan_unspaced(nd_scan *c, uint32_t kc) {
    c->kc = kc;
    c->bk = c->bk1 * ND_B;
    c->bkc = 1;
    for (uint32_t i = 0; i < kc; i++) c->bkc *= ND_B;
}

/* Set up a call's unspaced scripts from its tokenizer, kind, K and flags;
 * 0 for arguments that do not go together. */
static inline int scan_unspaced_args(nd_scan *c, int tokenizer, int kind, uint32_t k,
                                     unsigned flags) {
    uint32_t kc = ND_FLAG_UNSPACED_K(flags);
    c->v4 = tokenizer == ND_TOKENIZER_4;
    if (tokenizer < ND_TOKENIZER_2 || tokenizer > ND_TOKENIZER_4 || kind != ND_SHINGLE_WORD)
        return kc == 0;
    if (kc > ND_MAX_K) return 0;
    scan_unspaced(c, kc ? kc : ND_UNSPACED_K(k));
    return 1;
}

#define ND_HBUF 128 /* shingle hashes gathered before the sketch's set/signature pass */

/* Rolling window and the pending shingle hashes (the sketch's: hbuf, nh); on
 * the scanner's stack. */
typedef struct {
    uint64_t S; /* sum of the window's item hashes times powers of B (MODE_UNSPACED:
                   of all items so far, P_n) */
    uint64_t n; /* items (words or code points) rolled in */
    uint32_t nh;
    int emitted; /* MODE_UNSPACED: a whole shingle was emitted */
    uint64_t ring[16]; /* item i at ring[i & 15] (MODE_UNSPACED: P_i); never-written
                          slots are 0 */
    uint64_t hbuf[ND_HBUF];
    /* winnowing only: item i covers code points [ps[i & 15], pe[i & 15]) */
    int64_t ps[16], pe[16];
    uint8_t pf[16]; /* winnowing with tokenizer 2: item i's ND_FOLD_* flags */
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
    /* tokenizers 2, 3 only: the ND_FOLD_* flags of the current word (3: with
     * ND_UC3_CONF/LATIN until word_end) and those
     * waiting for the next one; hstate 1: a hyphen ended the word's letters,
     * 2: and then a line break (hsoft: the hyphen was a soft one, which joins
     * within a line too; hcr: the break so far is a CR, which LF may follow;
     * hfolds: the hyphen's own fold flags, the word's unless a line break
     * follows it: a soft hyphen at a line end is typesetting's, not a disguise) */
    uint8_t wflags, pflags, hstate, hsoft, hcr, hfolds;
} nd_word;

/* What a scanner makes: the shingle kind, and whether the shingles go to
 * winnowing with the code points they cover. The sketch needs no positions;
 * the mode is a constant at every call, so it pays nothing for them. */
enum { MODE_WORD = 0, MODE_CHAR = 1, MODE_SPANS = 2, MODE_V2 = 4, MODE_TEXT = 8, MODE_V3 = 16 };
#define MODE_KIND(m) ((m) & 1)
#define MODE_HAS_SPANS(m) ((m) & MODE_SPANS)
/* ND_SCAN_V2 0: a file that scans with tokenizer 1 only (sketch.h says why) */
#ifndef ND_SCAN_V2
#define ND_SCAN_V2 1
#endif
#define MODE_IS_V2(m) (ND_SCAN_V2 && ((m) & MODE_V2))
/* tokenizer 3: tokenizer 2's scanner (MODE_V2 is set too) on its own table, and
 * its own disguise flag (word_end) */
#define MODE_IS_V3(m) (ND_SCAN_V2 && ((m) & MODE_V3))
/* char mode writing the normalized text (scan_put) instead of hashing it */
#define MODE_IS_TEXT(m) ((m) & MODE_TEXT)
/* flags are tracked only where someone reads them */
#define MODE_FLAGS(m) (MODE_IS_V2(m) && MODE_HAS_SPANS(m))
/* tokenizer 2's words: letters of scripts written without spaces are tokens */
#define MODE_UNSPACED(m) (MODE_IS_V2(m) && MODE_KIND(m) == MODE_WORD && !MODE_IS_TEXT(m))

/* Where each shingle goes: defined by the file that includes this header.
 * [s, e) are the code points it covers (MODE_SPANS only, else 0); f the
 * ND_FOLD_* flags of its items (MODE_FLAGS only, else 0). */
static inline void scan_emit(nd_scan *c, nd_roll *r, uint64_t h, int64_t s, int64_t e,
                             unsigned f);
/* MODE_TEXT: one code point of the normalized text, to the including file. */
static inline void scan_put(nd_scan *c, uint32_t cp);


/* MODE_UNSPACED: the shingle that ends at this item is its last L items, L
 * per item (K for a word, kc for an unspaced letter; bl = B^L). The sum of all
 * items so far, P_n = P_(n-1) * B + x_n, is kept for the last 16 items; the
 * window's sum is P_n - P_(n-L) * B^L, the same value as the K-window's sum. */
static inline void roll_push_len(nd_scan *c, nd_roll *r, int mode, uint64_t x, int64_t s,
                                 int64_t e, unsigned f, uint32_t L, uint64_t bl) {
    uint64_t n = r->n + 1;
    uint64_t P = r->S * ND_B + x;
    uint64_t before = r->ring[(n - L) & 15]; /* P_(n-L): read before slot n & 15 is reused */
    r->S = P;
    r->ring[n & 15] = P;
    if (MODE_HAS_SPANS(mode)) {
        r->ps[(n - 1) & 15] = s;
        r->pe[(n - 1) & 15] = e;
    }
    if (MODE_FLAGS(mode)) r->pf[(n - 1) & 15] = (uint8_t)f;
    r->n = n;
    if (n >= L) {
        r->emitted = 1;
        uint64_t h = fmix64((P - before * bl) ^ c->shingle_seed);
        if (MODE_HAS_SPANS(mode)) {
            unsigned ff = 0;
            if (MODE_FLAGS(mode))
                for (uint32_t j = 1; j <= L; j++) ff |= r->pf[(n - j) & 15];
            scan_emit(c, r, h, r->ps[(n - L) & 15], r->pe[(n - 1) & 15], ff);
        } else {
            scan_emit(c, r, h, 0, 0, 0);
        }
    }
}

/* Roll one item hash (word or code point) into the K-window. [s, e) are the
 * code points the item covers (winnowing only). */
static inline void roll_push(nd_scan *c, nd_roll *r, int mode, uint64_t x, int64_t s, int64_t e,
                             unsigned f) {
    if (MODE_UNSPACED(mode)) {
        roll_push_len(c, r, mode, x, s, e, f, c->k, c->bk);
        return;
    }
    uint64_t old = r->ring[(r->n - c->k) & 15]; /* 0 while fewer than K items */
    uint64_t S = (r->S - old * c->bk1) * ND_B + x;
    r->S = S;
    r->ring[r->n & 15] = x;
    if (MODE_HAS_SPANS(mode)) {
        r->ps[r->n & 15] = s;
        r->pe[r->n & 15] = e;
    }
    if (MODE_FLAGS(mode)) r->pf[r->n & 15] = (uint8_t)f;
    if (++r->n >= c->k) {
        if (MODE_HAS_SPANS(mode)) {
            int64_t a = r->ps[(r->n - c->k) & 15], b = r->pe[(r->n - 1) & 15];
            /* reversed only for a char:1 shingle that is the space between two
             * words: it covers what lies between them, in either order */
            unsigned ff = 0;
            if (MODE_FLAGS(mode))
                for (uint32_t j = 1; j <= c->k; j++) ff |= r->pf[(r->n - j) & 15];
            scan_emit(c, r, fmix64(S ^ c->shingle_seed), a < b ? a : b, a < b ? b : a, ff);
            return;
        }
        scan_emit(c, r, fmix64(S ^ c->shingle_seed), 0, 0, 0);
    }
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

/* Tokenizer 3's word flags: a look-alike folded to ASCII is a disguise only
 * beside a Latin letter left as it is (a mixed-script word, UTS #39); a word
 * wholly in Cyrillic or Greek is a genuine word of its language. */
static inline unsigned word_flags3(unsigned f) {
    unsigned both = ND_UC3_CONF | ND_UC3_LATIN;
    return (f & ~both) | ((f & both) == both ? ND_FOLD_CONFUSABLE : 0);
}

static inline void word_end(nd_scan *c, nd_roll *r, nd_word *w, int mode) {
    uint64_t h = w->h;
    if (w->nacc) h = (h ^ w->acc) * ND_M1;
    unsigned own = w->wflags | w->hfolds;
    unsigned f = MODE_IS_V3(mode) && MODE_FLAGS(mode) ? word_flags3(own) : own;
    roll_push(c, r, mode, fmix64(h + w->len), w->start, w->end, f);
    w->wflags = 0;
    w->hfolds = 0;
    w->h = c->word_seed;
    w->acc = 0;
    w->nacc = 0;
    w->len = 0;
    w->in_word = 0;
}

static inline uint64_t char_hash(const nd_scan *c, uint32_t cp) {
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
static inline void word_cp(nd_scan *c, nd_roll *r, nd_word *w, int mode, uint32_t cp, int alnum,
                           unsigned f) {
    if (!alnum) {
        if (w->in_word) word_end(c, r, w, mode);
        return;
    }
    if (MODE_FLAGS(mode)) {
        if (!w->in_word) {
            w->wflags = w->pflags;
            w->pflags = 0;
        }
        w->wflags |= (uint8_t)f;
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
static inline void char_cp(nd_scan *c, nd_roll *r, nd_word *w, int mode, uint32_t cp, int alnum,
                           unsigned f) {
    if (!alnum) {
        w->in_word = 0;
        return;
    }
    if (MODE_IS_TEXT(mode)) {
        if (!w->in_word && w->len > 0) scan_put(c, 0x20);
        if (!w->in_word) w->len++;
        scan_put(c, cp);
        w->in_word = 1;
        (void)r;
        (void)f;
        return;
    }
    if (!w->in_word && w->len > 0) /* len: words seen */
        roll_push(c, r, mode, char_hash(c, 0x20), w->cp, w->end, 0);
    if (!w->in_word) w->len++;
    roll_push(c, r, mode, char_hash(c, cp), w->cp, w->cp + 1, f | w->pflags);
    w->pflags = 0;
    if (MODE_HAS_SPANS(mode)) w->end = w->cp + 1;
    w->in_word = 1;
}

/* decode + fold one non-ASCII sequence at p; returns bytes consumed, 0 = invalid */
static inline size_t scan_nonascii(nd_scan *c, nd_roll *r, nd_word *w, int mode, const uint8_t *p,
                                   const uint8_t *end) {
    uint32_t cp;
    size_t n = utf8_decode(p, end, &cp);
    if (n == 0) return 0;
    const nd_uc_rec *u = uc_lookup(cp);
    if (ND_LIKELY(u->n == 1)) {
        uint32_t f = (uint32_t)((int32_t)cp + u->delta);
        if (MODE_KIND(mode) == MODE_WORD)
            word_cp(c, r, w, mode, f, u->alnum & 1, 0);
        else
            char_cp(c, r, w, mode, f, u->alnum & 1, 0);
    } else {
        const uint32_t *x = nd_uc_exp[u->exp];
        for (unsigned i = 0; i < u->n; i++) {
            if (MODE_KIND(mode) == MODE_WORD)
                word_cp(c, r, w, mode, x[i], (u->alnum >> i) & 1, 0);
            else
                char_cp(c, r, w, mode, x[i], (u->alnum >> i) & 1, 0);
        }
    }
    return n;
}

/* MODE_UNSPACED: one folded letter of a script written without spaces, a
 * token of its own (its item hash is that of a one-letter word), ending the
 * word before it. */
static inline void unspaced_cp(nd_scan *c, nd_roll *r, nd_word *w, int mode, uint32_t cp,
                               unsigned f) {
    if (w->in_word) word_end(c, r, w, mode);
    uint8_t buf[8] = {0};
    size_t n = utf8_encode(cp, buf);
    uint64_t h = (c->word_seed ^ load_le64(buf)) * ND_M1;
    if (MODE_IS_V3(mode)) f = word_flags3(f); /* a token of its own is its own word */
    roll_push_len(c, r, mode, fmix64(h + n), w->cp, w->cp + 1, f | w->pflags, c->kc, c->bkc);
    w->pflags = 0;
}

/* Whether a folded output is a letter or digit of a script written without
 * spaces: the unspaced bit of its own (tokenizer 1) record, which folds it to
 * itself (gen_unicode.py). */
static inline int unspaced(uint32_t cp) {
    return cp >= 0x80 && (uc_lookup(cp)->alnum >> ND_UC_UNSPACED_SHIFT) & 1;
}

/* Tokenizer 2's letters of one code point: its outputs go to the word or the
 * char items, with its fold flags. */
static inline void scan_outs2(nd_scan *c, nd_roll *r, nd_word *w, int mode, const uint32_t *outs,
                              unsigned n, uint32_t alnum, unsigned f) {
    for (unsigned i = 0; i < n; i++) {
        if (MODE_UNSPACED(mode) && ((alnum >> i) & 1) && unspaced(outs[i]))
            unspaced_cp(c, r, w, mode, outs[i], f);
        else if (MODE_KIND(mode) == MODE_WORD)
            word_cp(c, r, w, mode, outs[i], (alnum >> i) & 1, f);
        else
            char_cp(c, r, w, mode, outs[i], (alnum >> i) & 1, f);
    }
}

/* The word (or, char mode, the run of letters) ends where a hyphen put it on hold. */
static inline void hyphen_end(nd_scan *c, nd_roll *r, nd_word *w, int mode) {
    w->hstate = 0;
    if (MODE_KIND(mode) == MODE_WORD) {
        word_end(c, r, w, mode);
    } else {
        w->in_word = 0;
        w->hfolds = 0;
    }
}

/* Tokenizers 2 to 4, one code point of the text: ignorables dropped (the word goes
 * on across them), the folds of gen_unicode.py, and a word broken by a hyphen
 * at a line end joined: after a hyphen that follows a letter the word is on
 * hold (hstate) through horizontal spaces and ignorables, and one line break
 * (LF, CR or CR LF); a letter or digit after the break joins the word, and
 * anything else (or a letter before the break, but for a soft hyphen)
 * ends it where it was. */
static inline void scan_cp2(nd_scan *c, nd_roll *r, nd_word *w, int mode, uint32_t cp) {
    uint32_t one;
    const uint32_t *outs = &one;
    unsigned n = 1, fl;
    uint32_t alnum;
    if (cp < 0x80) {
        uint8_t f = nd_ascii_fold[cp];
        one = f;
        alnum = f != 0;
        fl = cp == '-' ? ND_UC2_HYPHEN : (cp == ' ' || cp == '\t') ? ND_UC2_SPACE : 0;
        /* tokenizer 4: a form feed is blank (pdftotext ends a page with one, after the
         * line end its last hyphen sits at) */
        if (MODE_IS_V3(mode) && cp == '\f' && c->v4) fl = ND_UC2_SPACE;
        if (MODE_IS_V3(mode) && f >= 'a') fl |= ND_UC3_LATIN;
    } else {
        const nd_uc2_rec *u = !MODE_IS_V3(mode) ? uc2_lookup(cp)
                              : c->v4           ? uc4_lookup(cp)
                                                : uc3_lookup(cp);
        n = u->n;
        alnum = u->alnum;
        fl = u->flags;
        if (n == 1)
            one = (uint32_t)((int32_t)cp + u->delta);
        else
            outs = nd_uc2_flat + u->off;
    }
    unsigned folds = fl & (ND_FOLD_COMPAT | ND_FOLD_CONFUSABLE | ND_FOLD_INVISIBLE);
    /* tokenizer 3 flags look-alikes per word (word_flags3); a char item has no word */
    if (MODE_IS_V3(mode) && MODE_KIND(mode) == MODE_WORD)
        folds = fl & (ND_FOLD_COMPAT | ND_FOLD_INVISIBLE | ND_UC3_CONF | ND_UC3_LATIN);
    else if (MODE_IS_V3(mode))
        folds = fl & (ND_FOLD_COMPAT | ND_FOLD_INVISIBLE);
    if (ND_UNLIKELY(w->hstate)) {
        if (fl & ND_UC2_SPACE) {
            w->hsoft = 0; /* a soft hyphen joins only what follows it at once */
            w->hcr = 0;   /* and CR LF is one line end only when adjacent */
            return;
        }
        if (n == 0) {
            w->hcr = 0;
            if (MODE_FLAGS(mode) && MODE_KIND(mode) == MODE_WORD) w->wflags |= (uint8_t)folds;
            if (MODE_FLAGS(mode) && MODE_KIND(mode) == MODE_CHAR) w->pflags |= (uint8_t)folds;
            return;
        }
        /* tokenizer 4 also breaks a line at VT (a word processor's manual line break),
         * NEL, LINE and PARAGRAPH SEPARATOR */
        if (cp == '\n' || cp == '\r' ||
            (MODE_IS_V3(mode) && c->v4 &&
             (cp == 0x0B || cp == 0x85 || cp == 0x2028 || cp == 0x2029))) {
            if (w->hstate == 1) {
                w->hstate = 2;
                w->hcr = cp == '\r';
                w->hfolds = 0; /* a line-end hyphen: its own folds are not the word's */
                return;
            }
            if (cp == '\n' && w->hcr) {
                w->hcr = 0;
                return;
            }
        } else if ((alnum & 1) && (w->hstate == 2 || w->hsoft)) {
            unsigned joined = w->hstate == 2 ? ND_FOLD_HYPHEN : 0;
            if (MODE_FLAGS(mode) && MODE_KIND(mode) == MODE_WORD)
                w->wflags |= (uint8_t)(joined | w->hfolds);
            if (MODE_FLAGS(mode) && MODE_KIND(mode) == MODE_CHAR) w->pflags |= (uint8_t)joined;
            w->hfolds = 0;
            w->hstate = 0; /* joined: the letters go on in the same word */
            scan_outs2(c, r, w, mode, outs, n, alnum, folds);
            return;
        }
        hyphen_end(c, r, w, mode);
    }
    if ((fl & ND_UC2_HYPHEN) && w->in_word) {
        w->hstate = 1;
        w->hsoft = n == 0;
        if (MODE_FLAGS(mode)) w->hfolds = (uint8_t)folds;
        return;
    }
    if (n == 0) { /* ignorable: the word goes on across it */
        /* a mark (or tatweel) tokenizer 3 drops is part of the letter before it: the
         * word's span takes it in, so a passage's edge never splits a character */
        if (MODE_HAS_SPANS(mode) && MODE_KIND(mode) == MODE_WORD && w->in_word &&
            !(fl & ND_FOLD_INVISIBLE))
            w->end = w->cp + 1;
        if (MODE_FLAGS(mode)) {
            if (w->in_word && MODE_KIND(mode) == MODE_WORD)
                w->wflags |= (uint8_t)folds;
            else
                w->pflags |= (uint8_t)folds;
        }
        return;
    }
    scan_outs2(c, r, w, mode, outs, n, alnum, folds);
}

/* Scalar scanner, the reference for every path: bytes from p until p >= stop
 * (a multi-byte sequence may run on up to end). NULL on invalid UTF-8. */
__attribute__((always_inline)) static inline const uint8_t *scan_scalar(nd_scan *c, nd_roll *r, nd_word *w, int mode,
                                         const uint8_t *p, const uint8_t *stop,
                                         const uint8_t *end) {
    while (p < stop) {
        uint8_t b = *p;
        if (MODE_IS_V2(mode)) {
            if (b < 0x80 && b != '-' && !w->hstate) {
                /* what scan_cp2 makes of it, with no word on hold: its fold,
                 * with no fold flags, as a letter or a separator */
                uint8_t f = nd_ascii_fold[b];
                if (MODE_KIND(mode) == MODE_WORD) {
                    if (f) {
                        if (MODE_FLAGS(mode) && !w->in_word) {
                            w->wflags = w->pflags;
                            w->pflags = 0;
                        }
                        if (MODE_IS_V3(mode) && MODE_FLAGS(mode) && f >= 'a')
                            w->wflags |= ND_UC3_LATIN;
                        word_span(w, mode);
                        word_byte(w, f);
                        w->in_word = 1;
                    } else if (w->in_word) {
                        word_end(c, r, w, mode);
                    }
                } else {
                    char_cp(c, r, w, mode, f, f != 0, 0);
                }
                p++;
                if (MODE_HAS_SPANS(mode)) w->cp++;
                continue;
            }
            uint32_t cp = b;
            size_t n = 1;
            if (b >= 0x80 && (n = utf8_decode(p, end, &cp)) == 0) return NULL;
            scan_cp2(c, r, w, mode, cp);
            p += n;
            if (MODE_HAS_SPANS(mode)) w->cp++;
            continue;
        }
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
                char_cp(c, r, w, mode, f, f != 0, 0);
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
/* The blocks the AVX2 scanner hands back: kept out of line, so that the rare
 * non-ASCII block does not crowd the ASCII loop (inlined there, it cost the
 * sketch a quarter of its speed). */
__attribute__((noinline)) static const uint8_t *scan_scalar_block(nd_scan *c, nd_roll *r,
                                                                  nd_word *w, int mode,
                                                                  const uint8_t *p,
                                                                  const uint8_t *stop,
                                                                  const uint8_t *end) {
    return scan_scalar(c, r, w, mode, p, stop, end);
}

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
    nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, int mode) {
    uint8_t folded[64 + 24];
    memset(folded + 64, 0, 24);
    const __m256i a_1 = _mm256_set1_epi8('A' - 1), z_1 = _mm256_set1_epi8('Z' + 1);
    const __m256i la_1 = _mm256_set1_epi8('a' - 1), lz_1 = _mm256_set1_epi8('z' + 1);
    const __m256i d0_1 = _mm256_set1_epi8('0' - 1), d9_1 = _mm256_set1_epi8('9' + 1);
    const __m256i bit5 = _mm256_set1_epi8(0x20);
    uint64_t m = 0, ml = 0; /* ml: letters, for tokenizer 3's flags */
    for (int half = 0; half < 2; half++) {
        __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32 * half));
        __m256i up = _mm256_and_si256(_mm256_cmpgt_epi8(x, a_1), _mm256_cmpgt_epi8(z_1, x));
        __m256i lo = _mm256_or_si256(x, _mm256_and_si256(up, bit5));
        __m256i isl = _mm256_and_si256(_mm256_cmpgt_epi8(lo, la_1), _mm256_cmpgt_epi8(lz_1, lo));
        __m256i isd = _mm256_and_si256(_mm256_cmpgt_epi8(x, d0_1), _mm256_cmpgt_epi8(d9_1, x));
        uint32_t mm = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(isl, isd));
        m |= (uint64_t)mm << (32 * half);
        if (MODE_IS_V3(mode) && MODE_FLAGS(mode))
            ml |= (uint64_t)(uint32_t)_mm256_movemask_epi8(isl) << (32 * half);
        _mm256_storeu_si256((__m256i *)(void *)(folded + 32 * half), lo);
    }
    if (w->in_word) {
        /* the word from the previous block goes on for `run` bytes */
        unsigned run = (unsigned)_tzcnt_u64(~m);
        if (MODE_IS_V3(mode) && MODE_FLAGS(mode) && (ml & _bzhi_u64(~0ULL, run)))
            w->wflags |= ND_UC3_LATIN;
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
            if (MODE_IS_V3(mode) && MODE_FLAGS(mode) && (ml >> s))
                w->wflags |= ND_UC3_LATIN; /* a look-alike may follow in the next block */
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
        roll_push(c, r, mode, fmix64(h + len), w->cp + s, w->cp + s + len, 0);
        m &= m + (m & (0 - m)); /* clear this run of ones */
    }
}

/* Tokenizers 2 to 4, an all-ASCII block b with hyphens at the bits of d: whether
 * one of them may join a word across a line end, which scan_scalar follows.
 * A hyphen puts a word on hold only right after a letter or digit (or an
 * ignorable inside a word: in_word, for the block's first byte), and the hold
 * goes on only through spaces, tabs and a line break (tokenizer 4: VT too, and
 * a form feed is blank); any other next byte ends the word where it was, as any
 * separator does (scan_cp2), which is what words_block_avx2 does. So a hyphen
 * matters if a space, tab, CR, LF, VT or FF follows it (for tokenizers 2 and 3,
 * the last two end the word in scan_scalar as here), or it is the block's last
 * byte. */
static inline int hyphen_may_hold(const uint8_t *b, uint64_t d, int in_word) {
    for (; d != 0; d &= d - 1) {
        unsigned i = (unsigned)__builtin_ctzll(d);
        if (i == 63) return 1;
        int held = i == 0 ? in_word : nd_ascii_fold[b[i - 1]] != 0;
        uint8_t next = b[i + 1];
        if (held && (next == ' ' || next == '\t' || next == '\r' || next == '\n' ||
                     next == '\v' || next == '\f'))
            return 1;
    }
    return 0;
}

/* Whether the 64-byte block b (x0, x1) must go through scan_scalar: a byte
 * >= 0x80, or, for tokenizer 2, a hyphen that may put a word on hold
 * (hyphen_may_hold), a word on hold already, or flags waiting for the next
 * word. */
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline int block_scalar(
    __m256i x0, __m256i x1, const uint8_t *b, const nd_word *w, int mode) {
    if (_mm256_movemask_epi8(_mm256_or_si256(x0, x1)) != 0) return 1;
    if (MODE_IS_V2(mode)) {
        if (w->hstate | w->pflags) return 1;
        const __m256i dash = _mm256_set1_epi8('-');
        uint64_t d = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x0, dash)) |
                     (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x1, dash)) << 32;
        if (ND_UNLIKELY(d != 0)) return hyphen_may_hold(b, d, w->in_word);
    }
    return 0;
}

/* AVX2 word scanner for ASCII: fold and classify 64 bytes per step, then walk
 * the words with bit scans and hash each in 8-byte chunks straight from the
 * folded block. Hashes exactly as word_byte/word_end would; other blocks
 * (block_scalar) go through scan_scalar. The last partial block is padded with
 * NUL bytes (separators), which ends the last word just as the text end does. */
__attribute__((target("avx2,bmi,bmi2"), always_inline)) static inline const uint8_t *
scan_words_avx2(nd_scan *c, nd_roll *r, nd_word *w, const uint8_t *p, const uint8_t *end,
                int mode) {
    while ((size_t)(end - p) >= 64) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(const void *)p);
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
        if (ND_UNLIKELY(block_scalar(x0, x1, p, w, mode))) {
            p = scan_scalar_block(c, r, w, mode, p, p + 64, end);
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
        if (block_scalar(x0, x1, tail, w, mode)) return scan_scalar_block(c, r, w, mode, p, end, end);
        words_block_avx2(c, r, w, tail, mode);
        if (MODE_HAS_SPANS(mode)) w->cp += (int64_t)rest;
    }
    return end;
}

#endif

#endif
