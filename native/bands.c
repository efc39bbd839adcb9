/* LSH band keys (see neardup.h). */
#include "internal.h"

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
