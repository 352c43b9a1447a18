/* Vectorisable block kernels of the two-phase reproducible Allreduce: see widek.h.
 *
 * Written as fixed-length loops of 64-bit integer and floating-point lane
 * operations that GCC and Clang vectorise; on x86-64 each kernel is also
 * built for x86-64-v3 (AVX2) and x86-64-v4 (AVX-512, which converts int64 to
 * double in vector registers) and picked at load time (ifunc). */
#ifdef WK_SUFFIX /* tests/progs/widek_clones.c: one build per instruction set, no dispatch */
#define WK_CAT2(a, b) a##b
#define WK_CAT(a, b) WK_CAT2(a, b)
#define ml_wk_codes WK_CAT(ml_wk_codes, WK_SUFFIX)
#define ml_wk_fixed WK_CAT(ml_wk_fixed, WK_SUFFIX)
#define ml_wk_round WK_CAT(ml_wk_round, WK_SUFFIX)
#endif
#include "widek.h"

#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__) \
    && !defined(WK_SUFFIX)
#define WK_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define WK_CLONES
#endif

#define FRAC ((UINT64_C(1) << 52) - 1)

static inline uint64_t bits_of(double d)
{
    uint64_t b;
    memcpy(&b, &d, sizeof b);
    return b;
}

static inline double double_of(uint64_t b)
{
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

WK_CLONES int ml_wk_codes(const double *restrict x, int16_t *restrict T, int16_t *restrict nL)
{
    uint64_t bad = 0;
    for (int j = 0; j < ML_WK_B; j++) {
        uint64_t b = bits_of(x[j]);
        int64_t ex = (int64_t)((b >> 52) & 0x7ff);
        uint64_t m = (b & FRAC) | (UINT64_C(1) << 52);
        bad |= (uint64_t)(ex - 1) >= 0x7fe; /* zero, subnormal, Inf, NaN */
        /* trailing zeros of m: 2 x (m & -m) is exact in a double offset by 2^53 */
        uint64_t low = m & (~m + 1);
        int64_t tz = (int64_t)(bits_of(double_of(UINT64_C(0x4340000000000000) | low) - 0x1p53) >> 52) - 1024;
        T[j] = (int16_t)(ex - 1023);
        nL[j] = (int16_t)(1075 - ex - tz);
    }
    return bad != 0;
}

WK_CLONES int ml_wk_fixed(const double *restrict x, const int16_t *restrict T,
                          const int16_t *restrict nL, int D, int64_t *restrict f)
{
    uint64_t bad = 0;
    for (int j = 0; j < ML_WK_B; j++) {
        uint64_t b = bits_of(x[j]);
        int64_t ex = (int64_t)((b >> 52) & 0x7ff), t = T[j], nl = nL[j];
        uint64_t zero = (b << 1) == 0;
        uint64_t some = t > E_POSZERO; /* else every contribution is zero: f = 0 */
        uint64_t ok = some & (t != E_SPECIAL) & (t + nl + 1 <= D)
                      & (((uint64_t)(ex - 1) < 0x7fe) | zero);
        bad |= some & ~ok;
        uint64_t m = ((b & FRAC) | (UINT64_C(1) << 52)) & (zero - 1);
        int64_t s = ex - 1075 + nl; /* x = m 2^q, q - L = s */
        int64_t sl = s > 0 ? s : 0, sr = s < 0 ? -s : 0;
        sl = sl > 63 ? 63 : sl;
        sr = sr > 63 ? 63 : sr;
        uint64_t v = ((m << sl) >> sr) & (0 - ok);
        uint64_t neg = (uint64_t)0 - (b >> 63);
        f[j] = (int64_t)((v ^ neg) - neg);
    }
    return bad != 0;
}

WK_CLONES int ml_wk_round(const int64_t *restrict F, const int16_t *restrict T,
                          const int16_t *restrict nL, int D, double *restrict out)
{
    uint64_t bad = 0;
    for (int j = 0; j < ML_WK_B; j++) {
        int64_t t = T[j], L = -(int64_t)nL[j];
        uint64_t ok = (uint64_t)(t > E_POSZERO) & (t != E_SPECIAL) & (t - L + 1 <= D)
                      & (L >= -1022) & (L <= 1023 - 64);
        bad |= ok ^ 1;
        int64_t e = (L + 1023) & -(int64_t)ok;
        out[j] = (double)F[j] * double_of((uint64_t)e << 52);
    }
    return bad != 0;
}
