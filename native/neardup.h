/*
 * neardup kernel: tokenizing, shingle hashing, one-permutation MinHash
 * signatures, bottom-N fingerprints, winnowing, LSH band keys and fingerprint
 * Jaccard.
 *
 * The API is stateless: every buffer belongs to the caller, nothing is kept
 * between calls, so calls need no locks and cffi runs them without the GIL.
 * Functions return ND_OK (0) or a negative nd_status code (as int, since the
 * same codes go into the int32 per-text status arrays); they never abort on
 * any input bytes. The design is described in ARCHITECTURE.md at the
 * repository root.
 */
#ifndef NEARDUP_H
#define NEARDUP_H

/* ND_CDEF: build_ffi.py runs the preprocessor on this header for cffi's
 * declarations, which know the standard integer types already. */
#ifndef ND_CDEF
#include <stddef.h>
#include <stdint.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of this interface. Raise it with any change a caller compiled
 * against the old header would get wrong: a declaration, a constant, the
 * meaning of an argument or output. app/kernel.py refuses to load an
 * extension whose nd_abi_version() is not the one it was written for (8:
 * tokenizer 3; 9: nd_fp_encode_batch's flags, for shifted 24-bit fingerprints;
 * 10: tokenizer 4).
 */
#define ND_ABI_VERSION 10
unsigned nd_abi_version(void);

enum nd_status {
    ND_OK = 0,
    ND_E_UTF8 = -1,  /* a text is not valid UTF-8 */
    ND_E_ARG = -2,   /* a parameter is out of range */
    ND_E_NOMEM = -3, /* scratch memory could not be allocated */
    ND_E_SPACE = -4, /* an output buffer is too small */
    ND_E_DATA = -5   /* encoded input is malformed (a stored fingerprint) */
};

enum nd_shingle_kind {
    ND_SHINGLE_WORD = 0, /* K consecutive words */
    ND_SHINGLE_CHAR = 1  /* K consecutive code points of the normalized text */
};

/*
 * Tokenizers: what the text is read as, chosen per call (a collection keeps
 * the one it was written with; changing what one reads changes what stored
 * hashes mean, so a new reading is a new number).
 * 1: case-fold, then words are maximal runs of letters and digits (Python's
 *    str.casefold and str.isalnum, per code point).
 * 2: as 1, after folding per code point (native/gen_unicode.py has the rules):
 *    default-ignorable and format code points (zero-width space and joiners,
 *    soft hyphen, BOM, bidi controls) are dropped, so the word they sit in
 *    goes on; NFKC (ligatures, full-width forms, no-break and other spaces);
 *    confusable look-alikes (UTS #39 confusables.txt: Cyrillic and Greek
 *    letters that look Latin...) become their prototype's letters. And a word
 *    broken by a hyphen at a line end ("exam-\n  ple": a letter, a hyphen,
 *    spaces or tabs, one LF, CR or CR LF, spaces or tabs, a letter or digit)
 *    is joined; a hyphen within a line separates words as in 1.
 * 3: as 2 (ignorables, hyphens, unspaced scripts), with other folds per code
 *    point (gen_unicode.py): the Arabic tatweel is dropped too; NFKD, then
 *    nonspacing and enclosing marks dropped as ignorables are (accents,
 *    harakat, niqqud, dakuten: accent-insensitive, and decomposed text reads
 *    as composed); case folding; a Latin, Greek, Cyrillic, Armenian or
 *    Cherokee letter whose upper-case form looks like one ASCII letter or
 *    digit becomes it, case-consistently and never two letters of one script
 *    alike (other scripts keep their letters). ASCII reads as with 2. Its
 *    ND_FOLD_CONFUSABLE marks a word that mixes such a folded letter with an
 *    unfolded Latin one (a mixed-script word), so a word wholly in Cyrillic
 *    or Greek is not marked; char items never carry it.
 * 4: as 3, and each small letter of those scripts that 3 leaves alone and
 *    that itself looks like one ASCII letter or digit becomes it too, its
 *    capital with it (Cyrillic shha, komi de, palochka; Latin alpha, script
 *    g; Greek nu, upsilon; Armenian ho, vo): the letters a disguise uses
 *    that 3 judged by a capital looking like something else. A few letters
 *    of one script may now fold alike. Line-end hyphens also join with the
 *    small and full-width hyphen-minus, and across VT, NEL, U+2028 and
 *    U+2029; a form feed (a page end) is blank within the hold. Hangul
 *    fillers are spaces, and a spacing mark (Mc, an Indic vowel sign) is
 *    part of its word outside the unspaced scripts.
 * Positions (nd_winnow_batch) count code points of the text as given.
 */
enum nd_tokenizer { ND_TOKENIZER_1 = 1, ND_TOKENIZER_2 = 2, ND_TOKENIZER_3 = 3, ND_TOKENIZER_4 = 4 };

/* What tokenizers 2 to 4 folded in a word (nd_winnow_batch's folds). */
#define ND_FOLD_COMPAT 1u     /* a compatibility form (ligature, full-width letter...) */
#define ND_FOLD_CONFUSABLE 2u /* a look-alike of another script's letter */
#define ND_FOLD_INVISIBLE 4u  /* a default-ignorable or format code point */
#define ND_FOLD_HYPHEN 8u     /* joined across a hyphen at a line end */

#define ND_MAX_K 16
#define ND_MAX_NUM_PERM 1024
#define ND_MAX_FP_SIZE 4096
#define ND_MAX_WINDOW 65536 /* winnowing window, in shingles */

/* flags for calls with SIMD paths */
#define ND_FLAG_SCALAR 1u /* force the scalar path */
/*
 * Tokenizer 2's scripts written without spaces (issue 31), with
 * ND_SHINGLE_WORD: every letter or digit of Han, Hiragana, Katakana, Thai,
 * Lao, Khmer and Myanmar (the Script property; a Common one used only with
 * them, such as U+30FC, too) is a token of its own; its item hash is that of
 * a one-letter word, and it ends the word before it. Other text keeps its
 * words. The shingle that ends at such a letter is its last kc tokens, and
 * one that ends at a word its last K (a shingle across a change of script
 * takes the length of the script it ends in), with the hash formula below
 * over those items; kc = ND_UNSPACED_K(K) = min(2K + 1, ND_MAX_K), or
 * flags | ND_FLAG_UNSPACED(kc), 1 <= kc <= ND_MAX_K, for another (a words
 * layout, word:1, wants 1). A text with tokens but no whole shingle gives the
 * sketch one shingle of all of them, as a short text does. nd_winnow_batch
 * then winnows robustly (Schleimer et al., section 4.2): a window whose
 * minimum ties with the previous window's selection, still inside it, keeps
 * that selection instead of taking the rightmost one, so a run of equal
 * hashes (one letter repeated) selects once per window, not at every
 * position. ND_E_ARG for ND_FLAG_UNSPACED with tokenizer 1 or char shingles.
 */
#define ND_UNSPACED_K(k) ((k) < 8 ? 2 * (k) + 1 : ND_MAX_K)
#define ND_FLAG_UNSPACED_SHIFT 8
#define ND_FLAG_UNSPACED(kc) ((unsigned)(kc) << ND_FLAG_UNSPACED_SHIFT)
#define ND_FLAG_UNSPACED_K(flags) (((flags) >> ND_FLAG_UNSPACED_SHIFT) & 31u)

/* Bit set of the SIMD paths this CPU offers (and NEARDUP_SIMD does not turn off). */
#define ND_SIMD_SSE42 1u
#define ND_SIMD_AVX2 2u
unsigned nd_simd_level(void);

/*
 * Normalize one text: its words as the tokenizer reads them (case-folded runs
 * of letters and digits), written as UTF-8 joined by single spaces.
 * nd_normalize_bound(len, tokenizer) bytes always suffice (0 for an unknown
 * tokenizer). *out_len gets the bytes written.
 */
int nd_normalize(const uint8_t *text, size_t len, int tokenizer, uint8_t *out, size_t out_cap,
                 size_t *out_len);
size_t nd_normalize_bound(size_t len, int tokenizer);

/*
 * Shingle hashes, the same for nd_sketch_batch_packed and nd_winnow_batch (and
 * kept by callers, so changing them changes what stored hashes mean). All
 * arithmetic is modulo 2^64; fmix64 is MurmurHash3's 64-bit finalizer;
 * M = 0x9E3779B97F4A7C15, B = 0xD6E8FEB86659FD93, and
 *   part(t) = fmix64(seed * 0x2545F4914F6CDD1D + t * M + 0x632BE59BD9B4E019).
 * Words (ND_SHINGLE_WORD): a word's folded UTF-8 bytes in 8-byte chunks,
 * little endian, the last one zero-padded: h = part(2), h = (h ^ chunk) * M
 * per chunk; the word's item hash is fmix64(h + its byte length).
 * Characters (ND_SHINGLE_CHAR): the code points of the normalized text (space
 * included); item hash fmix64(((cp + 1) * M) ^ part(3)).
 * A shingle of items x_1 .. x_K (in text order) hashes to
 *   fmix64((x_1 * B^(K-1) + x_2 * B^(K-2) + ... + x_K) ^ part(1) ^ (kind << 8 | K)).
 * The sketch also gives a text of n items, 0 < n < K, one shingle of all of
 * them: the same formula with powers B^(n-1) .. B^0 (the K in the seed term
 * stays). Winnowing has no such shingle.
 */

/*
 * Sketch n texts. Text i is data[offsets[i] .. offsets[i+1]).
 * Outputs (caller-owned):
 *   signatures   n * num_perm   one-permutation MinHash, densified
 *   fp_values    fp_cap         text i's fingerprint is
 *                               fp_values[fp_offsets[i] .. fp_offsets[i+1]):
 *                               the fp_size smallest distinct 32-bit shingle
 *                               values (fewer if it has fewer), ascending
 *   fp_offsets   n + 1
 *   shingles     n              distinct shingle count
 *   status       n              ND_OK or the text's error code (ND_E_UTF8)
 * A text with no words has 0 shingles, an empty fingerprint, and a signature
 * of all 0xFFFFFFFF. Room that always suffices is n * fp_size; with less, the
 * first text that does not fit and all after it get ND_E_SPACE (nothing is
 * written past fp_cap) and so does the return value. Returns ND_E_ARG for bad
 * parameters, ND_E_NOMEM, else ND_OK (per-text problems go to status).
 */
int nd_sketch_batch_packed(const uint8_t *data, const uint64_t *offsets, size_t n,
                           int shingle_kind, int tokenizer, uint32_t k, uint32_t num_perm,
                           uint32_t fp_size, uint64_t seed, unsigned flags,
                           uint32_t *signatures, uint32_t *fp_values, uint64_t fp_cap,
                           uint64_t *fp_offsets, uint64_t *shingles, int32_t *status);

/*
 * Winnowing (Schleimer, Wilkerson, Aiken 2003) of n texts: of every window of
 * `window` consecutive shingle hashes (as above, for the kind, k and seed),
 * the minimum is selected, the rightmost one on ties; a selection is recorded
 * once, however many windows select it, so the selections of a text are in
 * text order. A text with fewer shingles than window has one window of all of
 * them; one with fewer than k items (no whole shingle) selects nothing.
 *   hashes, starts, ends  cap entries each: text i's selections are entries
 *                         [sel_offsets[i], sel_offsets[i+1]); the selected
 *                         shingle covers the text's code points [start, end)
 *                         (indices into the decoded text, not bytes)
 *   sel_offsets           n + 1
 *   status                n: ND_OK, or ND_E_UTF8 (the text selects nothing)
 *   folds                 cap entries, or NULL: per selection, the ND_FOLD_*
 *                         flags of its items (tokenizers 2-4; 0 with 1). A word
 *                         gets the folds of its letters and of the ignorables
 *                         inside it or after its last letter (before the next
 *                         separator), or, for ignorables between words, the
 *                         next word; a char item those of its code point and
 *                         of the ignorables since the letter before.
 * A word shingle covers its first word's first code point to its last word's
 * last one, where a word is the code points whose folded letters or digits it
 * is made of; a char shingle its first to its last letter or digit, or, for a
 * char:1 shingle that is the space between two words, from the end of the
 * one to the start of the other. A code point whose folding holds two words
 * (U+1FB7 folds to alpha, a combining mark, iota) is covered by both.
 * A text has at most as many selections as shingles; where cap runs out, that
 * text and all after it get ND_E_SPACE (nothing is written past cap, and
 * their sel_offsets equal the last good one), as does the return value.
 * Returns ND_E_ARG for bad parameters (1 <= window <= ND_MAX_WINDOW),
 * ND_E_NOMEM, else ND_OK.
 */
int nd_winnow_batch(const uint8_t *data, const uint64_t *offsets, size_t n, int shingle_kind,
                    int tokenizer, uint32_t k, uint32_t window, uint64_t seed, unsigned flags,
                    uint64_t *hashes, int64_t *starts, int64_t *ends, uint64_t cap,
                    uint64_t *sel_offsets, int32_t *status, uint8_t *folds);

/*
 * LSH band keys: for each of n signatures of num_perm values, bands keys of
 * 64 bits, band j hashing values [j*rows, (j+1)*rows) together with j.
 * Needs bands * rows <= num_perm. out is n * bands.
 */
int nd_band_keys(const uint32_t *signatures, size_t n, uint32_t num_perm,
                 uint32_t bands, uint32_t rows, uint64_t *out);

/*
 * Fingerprint Jaccard estimates of one query fingerprint against n candidates
 * packed in values: candidate i is values[offsets[i] .. offsets[i+1]). All
 * are sorted, distinct uint32 arrays made with fingerprint size fp_size; one
 * shorter than fp_size is complete (all the text's values). For a pair a, b,
 * let tau be the smaller of the largest values of the incomplete ones (no
 * limit if both are complete): the estimate is |A ∩ B| / |A ∪ B| over the
 * values <= tau. That is at least the fp_size smallest values of the union,
 * and the exact Jaccard when both are complete; two empty fingerprints give
 * 0. out[i] gets the estimate, or 0.0 where it is below threshold (the merge
 * stops once the threshold is out of reach; threshold <= 0 keeps them all).
 * ND_E_ARG for a query that is not sorted and distinct (checked: candidates are not).
 */
int nd_jaccard_many(const uint32_t *query, uint32_t nq, const uint32_t *values,
                    const uint64_t *offsets, size_t n, uint32_t fp_size,
                    double threshold, unsigned flags, double *out);

/*
 * Compressed fingerprints (Elias-Fano). A sorted, distinct uint32 array of
 * count values v_0 < ... < v_{count-1} is encoded as (count is kept by the
 * caller, not in the encoding):
 *   nothing at all                      when count == 0, else
 *   u8 L                                low bits per value: the largest L with
 *                                       count << L <= v_{count-1} + 1 (L <= 32)
 *   count * L bits                      v_i's low L bits, value after value,
 *                                       least significant bit first, in
 *                                       ceil(count * L / 8) bytes
 *   ((v_{count-1} >> L) + count) bits   bit (v_i >> L) + i set for every i, the
 *                                       rest clear, in whole bytes
 * so a value costs L + about 2 bits: 800 bytes for 256 values where plain
 * uint32 take 1,024. ND_FP_ENCODED_MAX(count) bytes always suffice.
 *
 * Shifted (asked for with flags ND_FP_SHIFTED, by a collection that keeps each
 * hash's top 24 bits: every value's low ND_FP_SHIFT (8) bits must be 0, else
 * ND_E_ARG): the values >> 8 are encoded as above, with ND_FP_SHIFTED set in
 * the L byte, and the decoder shifts them back: 24 bits are stored in L - 8 +
 * about 2 (about 576 bytes for 256). The decoder takes either form; without
 * the flag the encoder writes exactly what releases before it wrote.
 *
 * nd_fp_encode_batch: n arrays, array i is values[offsets[i] .. offsets[i+1]);
 * its encoding goes to out[out_offsets[i] .. out_offsets[i+1]), shifted with
 * flags ND_FP_SHIFTED (flags 0: plain). ND_E_ARG if an array is not strictly
 * increasing, a shifted one has a value with low bits set, or flags has other
 * bits (nothing useful is written), ND_E_SPACE if out_cap is too small.
 *
 * nd_fp_decode_batch: n encodings, encoding i is data[starts[i] .. ends[i])
 * of data_len bytes with counts[i] values (at most ND_MAX_FP_SIZE); its
 * values go to out[out_offsets[i] .. out_offsets[i+1]) (out_offsets[i+1] -
 * out_offsets[i] == counts[i] always, so out needs sum(counts) values).
 * status[i] is ND_OK, or ND_E_DATA for an encoding that is not exactly what
 * nd_fp_encode_batch writes for counts[i] values (wrong length, a value over
 * 2^32 - 1 or not above the one before, L > 32); its values are then 0.
 * Returns ND_E_ARG for bad arguments (a range outside data), ND_E_SPACE if
 * out_cap < sum(counts), else ND_OK.
 *
 * nd_jaccard_many_encoded: nd_jaccard_many against n encoded candidates (as
 * nd_fp_decode_batch takes them), each decoded inside the call; out[i] is
 * exactly what nd_jaccard_many gives for the decoded values, status[i] as in
 * nd_fp_decode_batch (out[i] = 0.0 where it is not ND_OK).
 */
#define ND_FP_SHIFT 8
#define ND_FP_SHIFTED 0x40
#define ND_FP_ENCODED_MAX(count) (1u + 4u * (count) + (3u * (count) + 7u) / 8u)
/*
 * nd_fp_encoded_bound: bytes that always hold the encodings of n arrays
 * (offsets as nd_fp_encode_batch takes them): the sum of ND_FP_ENCODED_MAX
 * over the non-empty ones (an empty array encodes to nothing). UINT64_MAX if
 * offsets decrease.
 */
uint64_t nd_fp_encoded_bound(const uint64_t *offsets, size_t n);
int nd_fp_encode_batch(const uint32_t *values, const uint64_t *offsets, size_t n, unsigned flags,
                       uint8_t *out, uint64_t out_cap, uint64_t *out_offsets);
int nd_fp_decode_batch(const uint8_t *data, uint64_t data_len, const uint64_t *starts,
                       const uint64_t *ends, const uint32_t *counts, size_t n, uint32_t *out,
                       uint64_t out_cap, uint64_t *out_offsets, int32_t *status);
int nd_jaccard_many_encoded(const uint32_t *query, uint32_t nq, const uint8_t *data,
                            uint64_t data_len, const uint64_t *starts, const uint64_t *ends,
                            const uint32_t *counts, size_t n, uint32_t fp_size,
                            double threshold, unsigned flags, double *out, int32_t *status);

/*
 * Passage layouts kept in records, compacted (app/index/passages.py writes
 * format 1; records store format 2 where it is smaller). Format 1 is
 *   u32 anchors A | u32 words W | u32 overflow O
 *   A x u32 anchor hash | A x anchor word (u16, or u32 when W >= 65536)
 *   (W + 1) / 2 bytes of 4-bit word hashes | W bytes: gap << 4 | length (4 bits
 *   each, 15: see overflow) | O x u32 overflow values
 * Format 2 has the same head but W | ND_LAYOUT_COMPACT (| ND_LAYOUT_WIDE) and
 *   A x u32 anchor hash | A x u8: each anchor word minus the one before (the
 *   first minus 0), or with ND_LAYOUT_WIDE the words as in format 1 |
 *   the word hashes as in format 1 | (W + 1) / 2 bytes: 4-bit lengths, two to
 *   a byte, the first in the high half | (W + 7) / 8 bytes: bit i (least
 *   significant first) set where word i's gap is not 1 | (E + 1) / 2 bytes:
 *   those E gaps, 4 bits each as the lengths | the overflow values, as is.
 * A gap of 1 (one space between words) is most of them, so a word costs about
 * 5/8 of a byte instead of 1.
 *
 * nd_layout_compact: format 1 in, format 2 out. ND_E_DATA if the input is not
 * a well-formed format 1 layout, ND_E_SPACE if format 2 would not fit in
 * out_cap (pass one less than in_len to get format 2 only where smaller).
 * nd_layout_expand: format 2 in, the format 1 layout it came from out;
 * ND_E_DATA for anything that is not a well-formed format 2 layout,
 * ND_E_SPACE if out_cap is too small, with *out_len set to the size needed
 * (the format 1 size follows from the head).
 * Both formats begin with a head of ND_LAYOUT_HEAD bytes (A, W, O above).
 */
#define ND_LAYOUT_HEAD 12u
#define ND_LAYOUT_COMPACT 0x80000000u
#define ND_LAYOUT_WIDE 0x40000000u
int nd_layout_compact(const uint8_t *in, uint64_t in_len, uint8_t *out, uint64_t out_cap,
                      uint64_t *out_len);
int nd_layout_expand(const uint8_t *in, uint64_t in_len, uint8_t *out, uint64_t out_cap,
                     uint64_t *out_len);

/*
 * Passage layouts of n texts in format 1 (byte for byte what
 * app.index.passages.Layout.pack makes), from their anchors and words as
 * nd_winnow_batch gives them. Text i's anchors
 * are entries anchor_offsets[i] .. anchor_offsets[i+1] of anchor_hashes and
 * anchor_starts (anchor_count entries in all), its words entries
 * word_offsets[i] .. word_offsets[i+1] of word_hashes, word_starts and
 * word_ends (word_count in all; starts ascending). Its layout goes to
 * out[out_offsets[i] .. out_offsets[i+1]), little-endian:
 *   u32 anchors, u32 words, u32 overflows
 *   anchors x u32      the low 32 bits of each anchor hash
 *   anchors x u16      the first word whose start is >= the anchor's start
 *                      (u32 each in a text of 65,536 words or more)
 *   ceil(words / 2)    the low 4 bits of each word hash, two to a byte, high first
 *   words bytes        the gap before each word (its start minus the previous
 *                      word's end; its start for the first) in the high 4 bits
 *                      and its length in the low 4; 15 means "in the overflow list"
 *   overflows x u32    those gaps and lengths, in word order, gap first
 * ND_LAYOUT_MAX(anchors, words) bytes always hold one text's layout.
 * Returns ND_E_ARG for offsets that decrease or run past the counts,
 * ND_E_SPACE if out_cap is too small (out_offsets up to the last text that
 * fitted are written), else ND_OK.
 */
#define ND_LAYOUT_MAX(anchors, words) (ND_LAYOUT_HEAD + 8u * (anchors) + ((words) + 1u) / 2u + 9u * (words))
int nd_layout_pack_batch(const uint64_t *anchor_hashes, const int64_t *anchor_starts,
                         uint64_t anchor_count, const uint64_t *anchor_offsets,
                         const uint64_t *word_hashes, const int64_t *word_starts,
                         const int64_t *word_ends, uint64_t word_count,
                         const uint64_t *word_offsets, size_t n, uint8_t *out, uint64_t out_cap,
                         uint64_t *out_offsets);

/*
 * Passage layouts of n texts in format 3 (byte for byte what
 * app.index.passages.Layout.pack makes of a layout with bits, _pack_hashed),
 * from the same arrays as nd_layout_pack_batch, with bits (ND_LAYOUT_BITS_MIN
 * to ND_LAYOUT_BITS_MAX) of each word hash kept. Text i's layout goes to
 * out[out_offsets[i] .. out_offsets[i+1]), little-endian:
 *   u32 anchors A, u32 words W | ND_LAYOUT_HASHED, u32 overflows O
 *   u32 kind           bits | ND_LAYOUT_STEPS when the anchor words are steps
 *   A x u32            the low 32 bits of each anchor hash
 *   A x u8             each anchor's word (as format 1 finds it) minus the one
 *                      before (the first minus 0), when every such step is in
 *                      [0, 256); else A x u16 words (u32 when W >= 65536)
 *   ceil(W * bits / 8) the low bits of each word hash, least significant bit
 *                      first, packed little-endian
 *   ceil(W / 2)        4-bit lengths (15: see the overflow), two to a byte,
 *                      the first in the high half
 *   ceil(W / 8)        bit i (least significant first) set where word i's gap
 *                      (as format 1 computes it) is not 1
 *   ceil(E / 2)        those E gaps, 4 bits each as the lengths (15: overflow)
 *   O x u32            the overflowing gaps in word order, then the lengths
 * ND_LAYOUT3_MAX(anchors, words) bytes always hold one text's layout.
 * Returns ND_E_ARG for bits out of range, offsets that decrease or run past
 * the counts, or a text of ND_LAYOUT_HASHED words or more; ND_E_SPACE if
 * out_cap is too small (out_offsets up to the last text that fitted are
 * written), else ND_OK.
 */
#define ND_LAYOUT_HASHED 0x20000000u
#define ND_LAYOUT_STEPS 0x100u
#define ND_LAYOUT_BITS_MIN 4u
#define ND_LAYOUT_BITS_MAX 16u
#define ND_LAYOUT3_MAX(anchors, words) (ND_LAYOUT_HEAD + 8u + 8u * (anchors) + 12u * (words))
int nd_layout_pack3_batch(const uint64_t *anchor_hashes, const int64_t *anchor_starts,
                          uint64_t anchor_count, const uint64_t *anchor_offsets,
                          const uint64_t *word_hashes, const int64_t *word_starts,
                          const int64_t *word_ends, uint64_t word_count,
                          const uint64_t *word_offsets, size_t n, unsigned bits, uint8_t *out,
                          uint64_t out_cap, uint64_t *out_offsets);

/* The Unicode version the tokenizer tables were generated from (gen_unicode.py). */
const char *nd_unicode_version(void);
/* The confusables.txt the tables of tokenizers 2 to 4 were generated from: version, date,
 * source. */
const char *nd_confusables_version(void);

#ifdef __cplusplus
}
#endif

#endif
