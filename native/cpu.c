/*
 * The kernel's run-time facts: which SIMD paths this CPU offers (computed
 * once; every call with a SIMD path asks nd_active in internal.h), and the
 * interface version.
 */
#include "internal.h"

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

ND_EXPORT unsigned nd_abi_version(void) { return ND_ABI_VERSION; }
