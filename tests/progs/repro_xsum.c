/* Unit driver for the exact summation kernels (runtime/repro/exactsum.c), no MPI
 * calls.  stdin: one case per line, "d|f N hex1 ... hexN" (raw binary64 bits;
 * for 'f' the values are binary32 values widened to binary64).  stdout, per
 * case: "<acc> <win-seq> <win-tree>" as raw binary64 bits of the rounded sum
 * (a binary32 result is widened), "inexact" where ml_win could not be exact. */
#include "../../runtime/engines/repro/exactsum.c"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t bits(double x) { uint64_t b; memcpy(&b, &x, 8); return b; }

static void put_win(const ml_win *w, ml_xs_fmt fmt)
{
    double r;
    if (ml_win_round(w, fmt, &r) != 0)
        printf(" inexact");
    else
        printf(" %016" PRIx64, bits(fmt == ML_XS_BINARY32 ? (double)(float)r : r));
}

int main(void)
{
    char kind;
    int n;
    while (scanf(" %c %d", &kind, &n) == 2) {
        ml_xs_fmt fmt = kind == 'f' ? ML_XS_BINARY32 : ML_XS_BINARY64;
        double *x = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        ml_win *w = malloc(sizeof(ml_win) * (size_t)(n > 0 ? n : 1));
        for (int i = 0; i < n; i++) {
            uint64_t b;
            if (scanf(" %" SCNx64, &b) != 1)
                return 2;
            memcpy(&x[i], &b, 8);
            ml_win_from_double(&w[i], x[i]);
        }
        double a = ml_xs_sum(x, n, fmt);
        printf("%016" PRIx64, bits(fmt == ML_XS_BINARY32 ? (double)(float)a : a));
        ml_win seq = w[0];                       /* left to right */
        for (int i = 1; i < n; i++)
            ml_win_add(&w[i], &seq);
        put_win(&seq, fmt);
        for (int step = 1; step < n; step *= 2)  /* pairwise tree, right operand first */
            for (int i = 0; i + step < n; i += 2 * step)
                ml_win_add(&w[i + step], &w[i]);
        put_win(&w[0], fmt);
        if (memcmp(&seq, &w[0], sizeof seq) != 0)
            printf(" noncanonical");
        printf("\n");
        free(x);
        free(w);
    }
    return 0;
}
