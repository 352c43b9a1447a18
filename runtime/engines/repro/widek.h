/* Vectorisable kernels of the two-phase reproducible Allreduce (repro.c,
 * wide_allreduce) for binary64 input, one block of ML_WK_B elements at a time.
 *
 * Each kernel computes, branch-free, what the scalar code computes for the
 * common case, and returns nonzero when some element of the block is not that
 * case (subnormal, zero, Inf/NaN contribution, a span wider than D bits, a
 * result outside the exact-scaling range); the caller then redoes that block
 * with the scalar code.  The results are therefore bit-identical to the
 * scalar path: the kernels only make it faster (tests/test_repro.py checks
 * both against independently computed exact sums).
 *
 * Element codes, as in repro.c: T[i] = highest set bit of the element's
 * contributions, nL[i] = minus the lowest set bit (both reduced with MPI_MAX).
 */
#ifndef MLENS_WIDEK_H
#define MLENS_WIDEK_H
#include <stdint.h>

#define ML_WK_B 64

/* T codes of elements without a finite nonzero contribution (nL is then E_NONE). */
enum { E_NEGZERO = -32768, E_POSZERO = -32767, E_SPECIAL = 32767, E_NONE = -32768 };

/* Phase 1, local codes of normal x[i]: T = exponent, nL = -(lowest set bit). */
int ml_wk_codes(const double *x, int16_t *T, int16_t *nL);

/* Phase 2, narrow elements (reduced span T - L + 1 <= D): the exact integer x / 2^L. */
int ml_wk_fixed(const double *x, const int16_t *T, const int16_t *nL, int D, int64_t *f);

/* Phase 3, narrow elements with -1022 <= L <= 959: round(F) x 2^L (exact scaling). */
int ml_wk_round(const int64_t *F, const int16_t *T, const int16_t *nL, int D, double *out);

#endif
