/* widek_clones BLOCKS: runs the block kernels of runtime/engines/repro/widek.c as
 * built for x86-64-v4, x86-64-v3 and baseline x86-64 (tests/CMakeLists.txt) on
 * the same pseudo-random blocks (normal doubles near 1, doubles of every
 * exponent with cleared low bits, raw bit patterns; random element codes) and
 * counts blocks where a level differs from baseline: return value, and the
 * outputs of unflagged blocks.  Levels this CPU lacks are skipped.  Prints
 * "levels <list> blocks N fast <codes> <fixed> <round> mismatches M". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "widek.h"

#define DECL(L)                                                                              \
    int ml_wk_codes_##L(const double *, int16_t *, int16_t *);                             \
    int ml_wk_fixed_##L(const double *, const int16_t *, const int16_t *, int, int64_t *); \
    int ml_wk_round_##L(const int64_t *, const int16_t *, const int16_t *, int, double *);
DECL(v4)
DECL(v3)
DECL(base)

typedef struct {
    const char *name;
    int (*codes)(const double *, int16_t *, int16_t *);
    int (*fixed)(const double *, const int16_t *, const int16_t *, int, int64_t *);
    int (*round)(const int64_t *, const int16_t *, const int16_t *, int, double *);
    int ok;
} level_t;

static uint64_t s = 88172645463325252ULL;
static uint64_t r64(void)
{
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
}

int main(int argc, char **argv)
{
    long blocks = argc > 1 ? atol(argv[1]) : 100000;
    level_t lv[3] = {
        {"base", ml_wk_codes_base, ml_wk_fixed_base, ml_wk_round_base, 1},
        {"v3", ml_wk_codes_v3, ml_wk_fixed_v3, ml_wk_round_v3, __builtin_cpu_supports("avx2")},
        {"v4", ml_wk_codes_v4, ml_wk_fixed_v4, ml_wk_round_v4,
         __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq")
             && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl")}};
    double x[ML_WK_B], o[3][ML_WK_B];
    int16_t T[3][ML_WK_B], L[3][ML_WK_B];
    int64_t f[3][ML_WK_B], F[ML_WK_B];
    long bad = 0, fast[3] = {0, 0, 0};
    for (long it = 0; it < blocks; it++) {
        int mode = (int)(it % 4), D = 60 - (int)(it % 3), r[3];
        for (int j = 0; j < ML_WK_B; j++) {
            uint64_t b = r64();
            if (mode == 0) {
                double d = (double)(r64() >> 11) * 0x1p-53 * 2 - 1;
                memcpy(&b, &d, sizeof b);
            } else if (mode == 1) {
                b = (b & UINT64_C(0x800fffffffffffff)) | ((uint64_t)(1 + r64() % 2046) << 52);
                b &= ~((UINT64_C(1) << (r64() % 53)) - 1);
            }
            memcpy(&x[j], &b, sizeof b);
            F[j] = (int64_t)r64() >> (r64() % 64);
        }
        for (int v = 0; v < 3; v++)
            if (lv[v].ok)
                r[v] = lv[v].codes(x, T[v], L[v]);
        fast[0] += !r[0];
        for (int v = 1; v < 3; v++)
            bad += lv[v].ok && (r[v] != r[0] || (!r[0] && (memcmp(T[v], T[0], sizeof T[0])
                                                           || memcmp(L[v], L[0], sizeof L[0]))));
        if (mode == 3) /* element codes as another rank mix would give */
            for (int j = 0; j < ML_WK_B; j++) {
                T[0][j] = (int16_t)((int)(r64() % 2200) - 1100);
                L[0][j] = (int16_t)-(T[0][j] - (int)(r64() % 70));
            }
        for (int v = 0; v < 3; v++)
            if (lv[v].ok)
                r[v] = lv[v].fixed(x, T[0], L[0], D, f[v]);
        fast[1] += !r[0];
        for (int v = 1; v < 3; v++)
            bad += lv[v].ok && (r[v] != r[0] || (!r[0] && memcmp(f[v], f[0], sizeof f[0])));
        for (int v = 0; v < 3; v++)
            if (lv[v].ok)
                r[v] = lv[v].round(F, T[0], L[0], D, o[v]);
        fast[2] += !r[0];
        for (int v = 1; v < 3; v++)
            bad += lv[v].ok && (r[v] != r[0] || (!r[0] && memcmp(o[v], o[0], sizeof o[0])));
    }
    printf("levels");
    for (int v = 0; v < 3; v++)
        if (lv[v].ok)
            printf(" %s", lv[v].name);
    printf(" blocks %ld fast %ld %ld %ld mismatches %ld\n", blocks, fast[0], fast[1], fast[2], bad);
    return bad != 0;
}
