/* Reproducible, correctly rounded MPI_SUM reductions (MPILENS_REPRO=1).
 *
 * Every contribution is turned into an exact, canonical representation
 * (exactsum.h); MPI reduces those with a user-defined operation over PMPI
 * (any algorithm, any order: the combination is exact); each element is
 * rounded once.  Elements whose ml_win could not be exact (contributions more
 * than ~120 bits apart) are flagged identically on every rank and recomputed
 * with the full 2176-bit accumulator (ml_acc) in a second reduction.
 *
 * Only PMPI_* calls here: MPI_* would be profiled again.
 */
#include "repro.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "exactsum.h"
#include "overrides.h"
#include "scratch.h"
#include "widek.h"

typedef unsigned __int128 u128_t;

#define SLOW_CHUNK 4096   /* elements per ml_acc reduction (552 bytes each) */
#ifndef GATHER_MAX
#define GATHER_MAX 512    /* scalars x ranks up to which Allreduce/Reduce use one Allgather */
#endif
#ifndef WIDE_MIN
#define WIDE_MIN 256      /* scalars from which Allreduce/Reduce take the two-phase path */
#endif

static int repro_on;
static int repro_ready;
int ml_repro_allreduce_on; /* repro_on && repro_ready: the dispatch's test (repro.h) */
static MPI_Datatype win_type, acc_type;
static MPI_Op win_op, acc_op;

/* ---- scratch buffers: per thread, grown on demand, kept between calls ---- */

enum { S_WIN, S_RES, S_IDX, S_ACC, S_ACCR, S_VAL, S_CNT,
       W_EXP, W_FIX, W_IDX, W_CIN, W_COUT, S_NSCRATCH };
static __thread ml_scratch_t scr[S_NSCRATCH];

static void *scratch(int which, size_t bytes)
{
    return ml_scratch_get(&scr[which], bytes ? bytes : 1);
}

/* ---- element kinds ---- */

typedef struct {
    int single;      /* binary32 scalars (else binary64) */
    int mult;        /* scalars per element: 2 for complex */
} kind_t;

static int same_type(MPI_Datatype a, MPI_Datatype b)
{
    return b != MPI_DATATYPE_NULL && a == b;
}

static int kind_of(MPI_Datatype dt, kind_t *k)
{
    if (same_type(dt, MPI_DOUBLE) || same_type(dt, MPI_DOUBLE_PRECISION) || same_type(dt, MPI_REAL8))
        *k = (kind_t){0, 1};
    else if (same_type(dt, MPI_FLOAT) || same_type(dt, MPI_REAL) || same_type(dt, MPI_REAL4))
        *k = (kind_t){1, 1};
    else if (same_type(dt, MPI_C_DOUBLE_COMPLEX) || same_type(dt, MPI_DOUBLE_COMPLEX)
             || same_type(dt, MPI_COMPLEX16))
        *k = (kind_t){0, 2};
    else if (same_type(dt, MPI_C_FLOAT_COMPLEX) || same_type(dt, MPI_COMPLEX)
             || same_type(dt, MPI_COMPLEX8))
        *k = (kind_t){1, 2};
    else
        return 0;
    return 1;
}

/* Whether the engine serves this call; *n = scalars per element times count. */
static int served(long count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, kind_t *k)
{
    int inter = 1;
    if (!repro_on || !repro_ready || op != MPI_SUM || count <= 0 || !kind_of(dt, k))
        return 0;
    if (count > INT_MAX / 2 || PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return 0;
    return 1;
}

static double scalar_in(const void *buf, size_t i, int single)
{
    return single ? (double)((const float *)buf)[i] : ((const double *)buf)[i];
}

static void scalar_out(void *buf, size_t i, int single, double v)
{
    if (single)
        ((float *)buf)[i] = (float)v;    /* v is already a binary32 value */
    else
        ((double *)buf)[i] = v;
}

static ml_win *to_win(const void *in, int n, int single)
{
    ml_win *w = scratch(S_WIN, (size_t)n * sizeof(ml_win));
    if (!w)
        return NULL;
    if (single)
        for (int i = 0; i < n; i++)
            ml_win_from_double(&w[i], ((const float *)in)[i]);
    else
        for (int i = 0; i < n; i++)
            ml_win_from_double(&w[i], ((const double *)in)[i]);
    return w;
}

/* Indices i < n whose r[i] needs the accumulator, into scratch S_IDX; returns how many (-1: no memory). */
static int flagged(const ml_win *r, int n, int **idx)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        k += ml_win_needs_acc(&r[i]);
    *idx = scratch(S_IDX, (size_t)k * sizeof(int));
    if (!*idx)
        return -1;
    k = 0;
    for (int i = 0; i < n; i++)
        if (ml_win_needs_acc(&r[i]))
            (*idx)[k++] = i;
    return k;
}

static ml_acc *accs_of(const void *in, const int *idx, int k, int single, int which)
{
    ml_acc *a = scratch(which, (size_t)k * sizeof(ml_acc));
    if (a)
        for (int j = 0; j < k; j++)
            ml_acc_from_double(&a[j], scalar_in(in, idx ? (size_t)idx[j] : (size_t)j, single));
    return a;
}

/* Writes out[i] = round(r[i]) for i < n, taking flagged elements from slow[] in order. */
static void write_results(void *out, const ml_win *r, int n, const double *slow, int single)
{
    ml_xs_fmt fmt = single ? ML_XS_BINARY32 : ML_XS_BINARY64;
    int s = 0;
    for (int i = 0; i < n; i++) {
        double v;
        if (ml_win_round(&r[i], fmt, &v) != 0)
            v = slow[s++];
        scalar_out(out, (size_t)i, single, v);
    }
}

/* ---- the distributed reductions (n = scalars) ---- */

/* Allreduce, or Reduce when root >= 0 (computed as an Allreduce: every rank
 * must know which elements need the slow path). */
static int repro_allreduce(const void *in, void *out, int n, int single, int root, MPI_Comm comm)
{
    int rank, rc, *idx, k;
    PMPI_Comm_rank(comm, &rank);
    ml_win *w = to_win(in, n, single);
    ml_win *r = scratch(S_RES, (size_t)n * sizeof(ml_win));
    if (!w || !r)
        return MPI_ERR_NO_MEM;
    if ((rc = PMPI_Allreduce(w, r, n, win_type, win_op, comm)) != MPI_SUCCESS)
        return rc;
    if ((k = flagged(r, n, &idx)) < 0)
        return MPI_ERR_NO_MEM;
    double *slow = scratch(S_VAL, (size_t)k * sizeof(double));
    if (!slow)
        return MPI_ERR_NO_MEM;
    for (int j0 = 0; j0 < k; j0 += SLOW_CHUNK) {
        int m = k - j0 < SLOW_CHUNK ? k - j0 : SLOW_CHUNK;
        ml_acc *a = accs_of(in, idx + j0, m, single, S_ACC);
        ml_acc *ar = scratch(S_ACCR, (size_t)m * sizeof(ml_acc));
        if (!a || !ar)
            return MPI_ERR_NO_MEM;
        if ((rc = PMPI_Allreduce(a, ar, m, acc_type, acc_op, comm)) != MPI_SUCCESS)
            return rc;
        for (int j = 0; j < m; j++)
            slow[j0 + j] = ml_acc_round(&ar[j], single ? ML_XS_BINARY32 : ML_XS_BINARY64);
    }
    if (root < 0 || rank == root)
        write_results(out, r, n, slow, single);
    return MPI_SUCCESS;
}

/* Short vectors on few ranks: one MPI_Allgather of the raw contributions
 * (no user-defined operation), then every rank sums each element exactly in
 * rank order; identical inputs give identical bits on every rank. */
static int gather_allreduce(const void *in, void *out, int n, int single, int root,
                            MPI_Comm comm)
{
    int P, rank, rc;
    PMPI_Comm_size(comm, &P);
    PMPI_Comm_rank(comm, &rank);
    size_t esz = single ? sizeof(float) : sizeof(double), row = esz * (size_t)n;
    char *all = scratch(W_CIN, row * (size_t)P);
    double *col = scratch(W_COUT, sizeof(double) * (size_t)P);
    if (!all || !col)
        return MPI_ERR_NO_MEM;
    if ((rc = PMPI_Allgather(in, (int)row, MPI_BYTE, all, (int)row, MPI_BYTE, comm)) != MPI_SUCCESS)
        return rc;
    if (root >= 0 && rank != root)
        return MPI_SUCCESS;
    ml_xs_fmt fmt = single ? ML_XS_BINARY32 : ML_XS_BINARY64;
    for (int i = 0; i < n; i++) {
        ml_win acc, one;
        for (int r = 0; r < P; r++) {
            col[r] = scalar_in(all + row * (size_t)r, (size_t)i, single);
            ml_win_from_double(r ? &one : &acc, col[r]);
            if (r)
                ml_win_add(&one, &acc);
        }
        double v;
        if (ml_win_round(&acc, fmt, &v) != 0)
            v = ml_xs_sum(col, P, fmt);
        scalar_out(out, (size_t)i, single, v);
    }
    return MPI_SUCCESS;
}

/* Two-phase Allreduce for long vectors, on built-in operations only:
 *  1. MPI_MAX over two int16 per element: the highest set bit T and (negated)
 *     the lowest set bit L of all contributions (codes for zeros and NaN/Inf);
 *  2. MPI_SUM over int64: each contribution as the exact integer x / 2^L,
 *     cut into slices of D = 63 - bits(P) bits (so that the sum of P slices
 *     cannot overflow): one low slice per element, then a high slice for the
 *     (usually few) elements whose span T - L + 1 exceeds D bits.
 * Elements with NaN/Inf or a span above 2D bits go through repro_allreduce.
 * binary64 input goes through the block kernels of widek.c (vectorised,
 * bit-identical to the scalar code below, which redoes any block they flag). */
static inline double pow2(int k)   /* 2^k for -1022 <= k <= 1023 */
{
    uint64_t b = (uint64_t)(k + 1023) << 52;
    double d;
    memcpy(&d, &b, sizeof d);
    return d;
}

/* Phase-1 codes of one contribution x (scalar path). */
static inline void codes_of(double x, int16_t *T, int16_t *nL)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    int ex = (int)((b >> 52) & 0x7ff);
    uint64_t m = b & ((UINT64_C(1) << 52) - 1);
    if (ex == 0x7ff) {
        *T = E_SPECIAL;
        *nL = E_NONE;
    } else if (ex == 0 && m == 0) {
        *T = (b >> 63) ? E_NEGZERO : E_POSZERO;
        *nL = E_NONE;
    } else {
        int q = ex ? ex - 1075 : -1074;
        m |= ex ? UINT64_C(1) << 52 : 0;
        *T = (int16_t)(q + 63 - __builtin_clzll(m));
        *nL = (int16_t)-(q + __builtin_ctzll(m));
    }
}

static int wide_allreduce(const void *in, void *out, int n, int single, int root, MPI_Comm comm)
{
    int P, rank, rc;
    PMPI_Comm_size(comm, &P);
    PMPI_Comm_rank(comm, &rank);
    int D = 63 - (32 - __builtin_clz((unsigned)P));
    /* E = [T[0..n) | nL[0..n)], local codes reduced in place with MPI_MAX */
    int16_t *E = scratch(W_EXP, sizeof(int16_t) * 2 * (size_t)n);
    if (!E)
        return MPI_ERR_NO_MEM;
    const double *xd = in;
    for (int i0 = 0; i0 < n; i0 += ML_WK_B) {
        int m = n - i0 < ML_WK_B ? n - i0 : ML_WK_B;
        if (single || m < ML_WK_B || ml_wk_codes(xd + i0, E + i0, E + n + i0))
            for (int i = i0; i < i0 + m; i++)
                codes_of(scalar_in(in, (size_t)i, single), &E[i], &E[n + i]);
    }
    if ((rc = PMPI_Allreduce(MPI_IN_PLACE, E, 2 * n, MPI_SHORT, MPI_MAX, comm)) != MPI_SUCCESS)
        return rc;
    const int16_t *ET = E, *EL = E + n;
    /* Room for the worst case (every element wide or slow): only the pages
     * used are ever touched.  f is reduced in place: [low slices | high slices]. */
    int64_t *f = scratch(W_FIX, sizeof(int64_t) * 2 * (size_t)n), *F = f;
    int *idx = scratch(W_IDX, sizeof(int) * (size_t)n);
    size_t esz = single ? sizeof(float) : sizeof(double);
    char *cin = scratch(W_CIN, esz * (size_t)n), *cout = scratch(W_COUT, esz * (size_t)n);
    if (!f || !idx || !cin || !cout)
        return MPI_ERR_NO_MEM;
    const u128_t mask = ((u128_t)1 << D) - 1;
    int k = 0, w = n;
    for (int i0 = 0; i0 < n; i0 += ML_WK_B) {
        int m = n - i0 < ML_WK_B ? n - i0 : ML_WK_B;
        if (!single && m == ML_WK_B && !ml_wk_fixed(xd + i0, ET + i0, EL + i0, D, f + i0))
            continue;
        for (int i = i0; i < i0 + m; i++) {
            int T = ET[i], L = -EL[i];
            double x = scalar_in(in, (size_t)i, single);
            int64_t lo = 0, hi = 0;
            if (T == E_SPECIAL || (T > E_POSZERO && T - L + 1 > 2 * D)) {
                memcpy(cin + esz * (size_t)k, (const char *)in + esz * (size_t)i, esz);
                idx[k++] = i;
            } else if (x != 0 && T - L + 1 <= D && L >= -1022 && L <= 1023) {
                lo = (int64_t)(x * pow2(-L));           /* exact: an integer below 2^D */
            } else if (x != 0) {
                uint64_t b;
                memcpy(&b, &x, sizeof b);
                int ex = (int)((b >> 52) & 0x7ff);
                uint64_t mt = (b & ((UINT64_C(1) << 52) - 1)) | (ex ? UINT64_C(1) << 52 : 0);
                int q = ex ? ex - 1075 : -1074, tz = __builtin_ctzll(mt);
                u128_t X = (u128_t)(mt >> tz) << (q + tz - L);
                lo = (int64_t)(uint64_t)(X & mask);
                hi = (int64_t)(uint64_t)(X >> D);
                if (b >> 63) {
                    lo = -lo;
                    hi = -hi;
                }
            }
            f[i] = lo;
            if (T > E_POSZERO && T != E_SPECIAL && T - L + 1 > D && T - L + 1 <= 2 * D)
                f[w++] = hi;
        }
    }
    if ((rc = PMPI_Allreduce(MPI_IN_PLACE, f, w, MPI_INT64_T, MPI_SUM, comm)) != MPI_SUCCESS)
        return rc;
    if (k > 0 && (rc = repro_allreduce(cin, cout, k, single, -1, comm)) != MPI_SUCCESS)
        return rc;
    if (root >= 0 && rank != root)
        return MPI_SUCCESS;
    ml_xs_fmt fmt = single ? ML_XS_BINARY32 : ML_XS_BINARY64;
    int s = 0;
    w = n;
    for (int i0 = 0; i0 < n; i0 += ML_WK_B) {
        int m = n - i0 < ML_WK_B ? n - i0 : ML_WK_B;
        if (!single && m == ML_WK_B && !ml_wk_round(F + i0, ET + i0, EL + i0, D, (double *)out + i0))
            continue;
        for (int i = i0; i < i0 + m; i++) {
            int T = ET[i], L = -EL[i];
            if (s < k && idx[s] == i) {
                memcpy((char *)out + esz * (size_t)i, cout + esz * (size_t)s, esz);
                s++;
                continue;
            }
            double v;
            if (T <= E_POSZERO) {
                v = T == E_NEGZERO ? -0.0 : 0.0;
            } else {
                /* sum = (hi 2^D + lo) 2^L, as a signed 128-bit integer */
                int64_t hi = T - L + 1 > D ? F[w++] : 0;
                if (hi == 0 && !single && L >= -1022 && L <= 1023 - 64) {
                    /* one correctly rounded int64 -> double conversion, exact scaling */
                    scalar_out(out, (size_t)i, single, (double)F[i] * pow2(L));
                    continue;
                }
                if (hi == 0 && single && L >= -126 && L <= 127 - 64) {
                    ((float *)out)[i] = (float)F[i] * (float)pow2(L);
                    continue;
                }
                __int128 mm = (__int128)hi * ((__int128)1 << D) + F[i];
                v = ml_xs_round_i128((int64_t)(mm >> 64), (uint64_t)mm, L, fmt);
            }
            scalar_out(out, (size_t)i, single, v);
        }
    }
    return MPI_SUCCESS;
}

/* Reduce_scatter: counts[] in scalars per rank; in holds sum(counts) scalars. */
static int repro_reduce_scatter(const void *in, void *out, const int *counts, int single,
                                MPI_Comm comm)
{
    int P, rank, rc, *idx, k;
    PMPI_Comm_size(comm, &P);
    PMPI_Comm_rank(comm, &rank);
    int *nf = scratch(S_CNT, sizeof(int) * 2 * (size_t)P);
    if (!nf)
        return MPI_ERR_NO_MEM;
    int *displ = nf + P;
    long total = 0, start = 0;
    for (int i = 0; i < P; i++) {
        if (i == rank)
            start = total;
        total += counts[i];
    }
    if (total > INT_MAX)
        return MPI_ERR_COUNT;
    int mine = counts[rank];
    ml_win *w = to_win(in, (int)total, single);
    ml_win *r = scratch(S_RES, (size_t)mine * sizeof(ml_win));
    if (!w || !r)
        return MPI_ERR_NO_MEM;
    if ((rc = PMPI_Reduce_scatter(w, r, counts, win_type, win_op, comm)) != MPI_SUCCESS)
        return rc;
    if ((k = flagged(r, mine, &idx)) < 0)
        return MPI_ERR_NO_MEM;
    if ((rc = PMPI_Allgather(&k, 1, MPI_INT, nf, 1, MPI_INT, comm)) != MPI_SUCCESS)
        return rc;
    long kall = 0;
    for (int i = 0; i < P; i++) {
        displ[i] = (int)kall;
        kall += nf[i];
    }
    double *slow = scratch(S_VAL, (size_t)k * sizeof(double));
    if (!slow)
        return MPI_ERR_NO_MEM;
    if (kall > 0) {
        /* Every rank learns every flagged (global) index, then the flagged
         * elements are reduce-scattered again as full accumulators. */
        int *gidx = malloc(sizeof(int) * (size_t)kall + 1);
        ml_acc *ar = scratch(S_ACCR, (size_t)k * sizeof(ml_acc));
        if (!gidx || !ar) {
            free(gidx);
            return MPI_ERR_NO_MEM;
        }
        for (int j = 0; j < k; j++)
            idx[j] += (int)start;
        rc = PMPI_Allgatherv(idx, k, MPI_INT, gidx, nf, displ, MPI_INT, comm);
        ml_acc *a = rc == MPI_SUCCESS ? accs_of(in, gidx, (int)kall, single, S_ACC) : NULL;
        free(gidx);
        if (rc != MPI_SUCCESS)
            return rc;
        if (!a)
            return MPI_ERR_NO_MEM;
        if ((rc = PMPI_Reduce_scatter(a, ar, nf, acc_type, acc_op, comm)) != MPI_SUCCESS)
            return rc;
        for (int j = 0; j < k; j++)
            slow[j] = ml_acc_round(&ar[j], single ? ML_XS_BINARY32 : ML_XS_BINARY64);
    }
    write_results(out, r, mine, slow, single);
    return MPI_SUCCESS;
}

/* Scan, or Exscan when exclusive (rank 0's output is left untouched). */
static int repro_scan(const void *in, void *out, int n, int single, int exclusive, MPI_Comm comm)
{
    int rank, rc, *idx, k, any = 0;
    PMPI_Comm_rank(comm, &rank);
    int has = !(exclusive && rank == 0);
    ml_win *w = to_win(in, n, single);
    ml_win *r = scratch(S_RES, (size_t)n * sizeof(ml_win));
    if (!w || !r)
        return MPI_ERR_NO_MEM;
    rc = exclusive ? PMPI_Exscan(w, r, n, win_type, win_op, comm)
                   : PMPI_Scan(w, r, n, win_type, win_op, comm);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((k = has ? flagged(r, n, &idx) : 0) < 0)
        return MPI_ERR_NO_MEM;
    /* Prefixes differ per rank: agree whether any rank needs the slow path. */
    if ((rc = PMPI_Allreduce(&k, &any, 1, MPI_INT, MPI_MAX, comm)) != MPI_SUCCESS)
        return rc;
    double *slow = scratch(S_VAL, (size_t)k * sizeof(double));
    if (!slow)
        return MPI_ERR_NO_MEM;
    int s = 0;
    for (int j0 = 0; any && j0 < n; j0 += SLOW_CHUNK) {   /* slow path: every element */
        int m = n - j0 < SLOW_CHUNK ? n - j0 : SLOW_CHUNK;
        ml_acc *a = scratch(S_ACC, (size_t)m * sizeof(ml_acc));
        ml_acc *ar = scratch(S_ACCR, (size_t)m * sizeof(ml_acc));
        if (!a || !ar)
            return MPI_ERR_NO_MEM;
        for (int j = 0; j < m; j++)
            ml_acc_from_double(&a[j], scalar_in(in, (size_t)(j0 + j), single));
        rc = exclusive ? PMPI_Exscan(a, ar, m, acc_type, acc_op, comm)
                       : PMPI_Scan(a, ar, m, acc_type, acc_op, comm);
        if (rc != MPI_SUCCESS)
            return rc;
        for (int j = 0; has && j < m; j++)
            if (ml_win_needs_acc(&r[j0 + j]))
                slow[s++] = ml_acc_round(&ar[j], single ? ML_XS_BINARY32 : ML_XS_BINARY64);
    }
    if (has)
        write_results(out, r, n, slow, single);
    return MPI_SUCCESS;
}

/* ---- the overrides ---- */

/* Allreduce (root < 0) or Reduce: the path depends only on n and the
 * communicator size, so every rank takes the same one. */
static int allreduce_path(const void *sendbuf, void *recvbuf, int n, int single, int root,
                          MPI_Comm comm)
{
    int P;
    const void *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    ml_mark_served();
    if (n >= WIDE_MIN)
        return wide_allreduce(in, recvbuf, n, single, root, comm);
    if (PMPI_Comm_size(comm, &P) == MPI_SUCCESS && (long)n * P <= GATHER_MAX)
        return gather_allreduce(in, recvbuf, n, single, root, comm);
    return repro_allreduce(in, recvbuf, n, single, root, comm);
}

/* Reduce_scatter with recvcounts (or, if NULL, recvcount for every rank), in elements. */
static int reduce_scatter_path(const void *sendbuf, void *recvbuf, const int *recvcounts,
                               int recvcount, kind_t k, int P, MPI_Comm comm)
{
    int *c = malloc(sizeof(int) * (size_t)P);
    if (!c)
        return MPI_ERR_NO_MEM;
    for (int i = 0; i < P; i++)
        c[i] = (recvcounts ? recvcounts[i] : recvcount) * k.mult;
    ml_mark_served();
    int rc = repro_reduce_scatter(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, c,
                                  k.single, comm);
    free(c);
    return rc;
}

/* MPI_Allreduce has one override for several engines (runtime/engines/coll/dispatch.c):
 * this is the reproducible engine's part of it. */
int ml_repro_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm)
{
    kind_t k;
    if (!served(count, datatype, op, comm, &k))
        return -1;
    return allreduce_path(sendbuf, recvbuf, count * k.mult, k.single, -1, comm);
}

int mlo_MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, int root, MPI_Comm comm)
{
    kind_t k;
    int P;
    if (!served(count, datatype, op, comm, &k) || PMPI_Comm_size(comm, &P) != MPI_SUCCESS
        || root < 0 || root >= P)
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    return allreduce_path(sendbuf, recvbuf, count * k.mult, k.single, root, comm);
}

int mlo_MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    kind_t k;
    int P;
    long total = 0;
    if (PMPI_Comm_size(comm, &P) == MPI_SUCCESS)
        for (int i = 0; i < P; i++)
            total += recvcounts[i] > 0 ? recvcounts[i] : 0;
    if (!served(total, datatype, op, comm, &k))
        return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
    return reduce_scatter_path(sendbuf, recvbuf, recvcounts, 0, k, P, comm);
}

/* MPI_Reduce_scatter_block has one override for several engines
 * (runtime/engines/coll/dispatch.c): this is the reproducible engine's part. */
int ml_repro_reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    kind_t k;
    int P;
    if (PMPI_Comm_size(comm, &P) != MPI_SUCCESS
        || !served((long)recvcount * P, datatype, op, comm, &k))
        return -1;
    return reduce_scatter_path(sendbuf, recvbuf, NULL, recvcount, k, P, comm);
}

/* Scan or Exscan. */
static int scan_path(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, int exclusive)
{
    kind_t k;
    if (!served(count, datatype, op, comm, &k))
        return exclusive ? PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm)
                         : PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm);
    ml_mark_served();
    return repro_scan(sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf, recvbuf, count * k.mult,
                      k.single, exclusive, comm);
}

int mlo_MPI_Scan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm)
{
    return scan_path(sendbuf, recvbuf, count, datatype, op, comm, 0);
}

int mlo_MPI_Exscan(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                   MPI_Op op, MPI_Comm comm)
{
    return scan_path(sendbuf, recvbuf, count, datatype, op, comm, 1);
}

/* ---- set-up ---- */

static void win_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const ml_win *a = in;
    ml_win *b = inout;
    for (int i = 0; i < *len; i++)
        ml_win_add(&a[i], &b[i]);
}

static void acc_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const ml_acc *a = in;
    ml_acc *b = inout;
    for (int i = 0; i < *len; i++)
        ml_acc_add(&a[i], &b[i]);
}

int ml_repro_enable(int on)
{
    int rc;
    if (on && !repro_ready) {
        if ((rc = PMPI_Type_contiguous((int)sizeof(ml_win), MPI_BYTE, &win_type)) != MPI_SUCCESS
            || (rc = PMPI_Type_commit(&win_type)) != MPI_SUCCESS
            || (rc = PMPI_Type_contiguous((int)sizeof(ml_acc), MPI_BYTE, &acc_type)) != MPI_SUCCESS
            || (rc = PMPI_Type_commit(&acc_type)) != MPI_SUCCESS
            || (rc = PMPI_Op_create(win_fn, 1, &win_op)) != MPI_SUCCESS
            || (rc = PMPI_Op_create(acc_fn, 1, &acc_op)) != MPI_SUCCESS)
            return rc;
        repro_ready = 1;
    }
    repro_on = on;
    ml_repro_allreduce_on = repro_on && repro_ready;
    return MPI_SUCCESS;
}

/* ---- the engine ---- */

static int repro_setting; /* MPILENS_REPRO */
static const char *const zero_one[] = {"0", "1", NULL};
static const ml_setting settings[] = {
    {.key = "repro", .type = ML_SET_CHOICE, .def = "0", .choices = zero_one, .out = &repro_setting,
     .accepted = "0 or 1",
     .help = "1: reproducible, correctly rounded MPI_SUM reductions on floating-point types "
             "(docs/repro.md)"},
    {0}};

static int init(void)
{
    return repro_setting ? ml_repro_enable(1) != MPI_SUCCESS : 0;
}

static void finalize(void)
{
    int finalized = 0;
    PMPI_Finalized(&finalized);
    if (repro_ready && !finalized) {
        PMPI_Op_free(&win_op);
        PMPI_Op_free(&acc_op);
        PMPI_Type_free(&win_type);
        PMPI_Type_free(&acc_type);
    }
    repro_ready = 0;
    repro_on = 0;
    ml_repro_allreduce_on = 0;
    ml_scratch_release(scr, S_NSCRATCH);
}

void ml_repro_finalize(void) { finalize(); }

const ml_engine_t ml_engine_repro = {
    .name = "repro",
    .settings = settings,
    .init = init,
    .finalize = finalize,
};
