/* Exact summation of IEEE binary64/binary32 values, rounded once.
 *
 * Two representations, both canonical (their bits depend only on the multiset
 * of contributions, never on the order in which they were combined), so an
 * MPI reduction that combines them in any order, on any rank, yields the same
 * bits everywhere:
 *
 *  - ml_win (24 bytes): the exact sum as a signed 128-bit integer times 2^l,
 *    where l is the lowest set bit of any contribution and t the highest.  It
 *    is exact whenever t - l + 1 + bits(n) <= 126 (n = number of
 *    contributions); otherwise it carries ML_XS_INEXACT and the caller
 *    recomputes that element with ml_acc.  The predicate is monotone in the
 *    multiset, so every rank sees the same flag.
 *  - ml_acc (552 bytes): a fixed-point accumulator covering every binary64
 *    value from 2^-1088 to 2^1088 in 68 signed 32-bit digits, always exact.
 *
 * Non-finite contributions are tracked by flags: NaN, or +Inf and -Inf
 * together, give NaN; +Inf (-Inf) alone gives +Inf (-Inf).  A zero exact sum
 * is -0.0 only if every contribution was -0.0 (IEEE round-to-nearest).
 */
#ifndef MLENS_EXACTSUM_H
#define MLENS_EXACTSUM_H
#include <stdint.h>

enum {
    ML_XS_NAN = 1, ML_XS_PINF = 2, ML_XS_NINF = 4,
    ML_XS_NOTNEGZERO = 8,   /* some contribution is not -0.0 */
    ML_XS_INEXACT = 16      /* ml_win only: span too wide, use ml_acc */
};

typedef struct {
    uint64_t lo;      /* low 64 bits of the signed 128-bit mantissa */
    int64_t hi;       /* high 64 bits */
    int16_t t;        /* highest set bit of any contribution (INT16_MIN: none) */
    int16_t l;        /* lowest set bit of any contribution (INT16_MAX: none) */
    uint16_t n;       /* number of contributions, saturating at 65535 */
    uint16_t flags;
} ml_win;

#define ML_ACC_DIGITS 68
#define ML_ACC_BASE (-1088)   /* weight of digit 0 is 2^ML_ACC_BASE */
typedef struct {
    int64_t d[ML_ACC_DIGITS]; /* digit i: weight 2^(32 i + ML_ACC_BASE); [0,2^32) when normal, last digit signed */
    uint64_t flags;
} ml_acc;

/* Target formats for the final rounding. */
typedef enum { ML_XS_BINARY64, ML_XS_BINARY32 } ml_xs_fmt;

void ml_win_from_double(ml_win *w, double x);
void ml_win_add(const ml_win *in, ml_win *inout);          /* inout += in */
/* Whether the result needs ml_acc (inexact and not decided by NaN/Inf). */
static inline int ml_win_needs_acc(const ml_win *w)
{
    return (w->flags & (ML_XS_INEXACT | ML_XS_NAN | ML_XS_PINF | ML_XS_NINF)) == ML_XS_INEXACT;
}
/* Rounded value; returns 0, or -1 if ml_win_needs_acc(w) (result untouched). */
int ml_win_round(const ml_win *w, ml_xs_fmt fmt, double *result);

/* (hi:lo, a signed 128-bit integer) * 2^l, correctly rounded; 0 gives +0.0. */
double ml_xs_round_i128(int64_t hi, uint64_t lo, int l, ml_xs_fmt fmt);

void ml_acc_from_double(ml_acc *a, double x);
void ml_acc_add(const ml_acc *in, ml_acc *inout);          /* inout += in, normalised */
double ml_acc_round(const ml_acc *a, ml_xs_fmt fmt);

/* Correctly rounded sum of n doubles (local, for tests and benchmarks). */
double ml_xs_sum(const double *x, int n, ml_xs_fmt fmt);

#endif
