/* Exact summation with a single final rounding: see exactsum.h. */
#include "exactsum.h"

#include <math.h>
#include <string.h>

typedef unsigned __int128 u128;

#define T_NONE INT16_MIN
#define L_NONE INT16_MAX
#define SPECIAL (ML_XS_NAN | ML_XS_PINF | ML_XS_NINF)

/* A finite binary64 as sign, integer mantissa m (0 < m < 2^53) and exponent q: x = ±m 2^q. */
typedef struct { int neg, kind; uint64_t m; int q; } decoded;
enum { K_ZERO, K_FINITE, K_INF, K_NAN };

static decoded decode(double x)
{
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    decoded d = { (int)(b >> 63), K_FINITE, b & ((UINT64_C(1) << 52) - 1), 0 };
    int e = (int)((b >> 52) & 0x7ff);
    if (e == 0x7ff) {
        d.kind = d.m ? K_NAN : K_INF;
    } else if (e == 0) {
        if (d.m == 0)
            d.kind = K_ZERO;
        d.q = -1074;
    } else {
        d.m |= UINT64_C(1) << 52;
        d.q = e - 1075;
    }
    return d;
}

static unsigned special_flags(const decoded *d)
{
    if (d->kind == K_NAN)
        return ML_XS_NAN | ML_XS_NOTNEGZERO;
    if (d->kind == K_INF)
        return (d->neg ? ML_XS_NINF : ML_XS_PINF) | ML_XS_NOTNEGZERO;
    if (d->kind == K_ZERO)
        return d->neg ? 0u : ML_XS_NOTNEGZERO;
    return ML_XS_NOTNEGZERO;
}

static int special_result(unsigned flags, double *r)
{
    if ((flags & ML_XS_NAN) || ((flags & ML_XS_PINF) && (flags & ML_XS_NINF)))
        *r = NAN;
    else if (flags & ML_XS_PINF)
        *r = INFINITY;
    else if (flags & ML_XS_NINF)
        *r = -INFINITY;
    else
        return 0;
    return 1;
}

static double signed_zero(unsigned flags)
{
    return (flags & ML_XS_NOTNEGZERO) ? 0.0 : -0.0;
}

/* Round a nonzero magnitude to the target format.  top (bit 63 set) holds the
 * leading 64 bits, its bit 63 having weight 2^tb; sticky says whether any
 * lower bit is set.  Round to nearest, ties to even, gradual underflow,
 * overflow to infinity. */
static double round_bits(uint64_t top, int sticky, int tb, int neg, ml_xs_fmt fmt)
{
    const int p = fmt == ML_XS_BINARY64 ? 53 : 24;
    const int emin = fmt == ML_XS_BINARY64 ? -1022 : -126;
    const double limit = fmt == ML_XS_BINARY64 ? INFINITY : 0x1p128;
    const uint64_t half = UINT64_C(1) << 63;
    int k = tb >= emin ? p : p - (emin - tb);   /* bits the result can hold */
    double mag;
    if (k < 0) {
        mag = 0.0;
    } else if (k == 0) {
        mag = (top > half || (top == half && sticky)) ? ldexp(1.0, emin - p + 1) : 0.0;
    } else {
        uint64_t mant = top >> (64 - k);
        uint64_t rem = top << k;
        if (rem > half || (rem == half && (sticky || (mant & 1))))
            mant++;
        if (fmt == ML_XS_BINARY64 && k == 53) {   /* normal binary64: assemble the bits */
            if (mant >> 53) {
                mant >>= 1;
                tb++;
            }
            if (tb > 1023)
                return neg ? -INFINITY : INFINITY;
            uint64_t b = ((uint64_t)neg << 63) | ((uint64_t)(tb + 1023) << 52)
                       | (mant & ((UINT64_C(1) << 52) - 1));
            memcpy(&mag, &b, sizeof mag);
            return mag;
        }
        mag = ldexp((double)mant, tb - k + 1);
        if (mag >= limit)
            mag = INFINITY;
    }
    return neg ? -mag : mag;
}

static int bitlen(unsigned v)
{
    return v ? 32 - __builtin_clz(v) : 0;
}

static int top_bit128(u128 v)
{
    uint64_t hi = (uint64_t)(v >> 64);
    return hi ? 127 - __builtin_clzll(hi) : 63 - __builtin_clzll((uint64_t)v);
}

/* ---- ml_win ---------------------------------------------------------- */

void ml_win_from_double(ml_win *w, double x)
{
    decoded d = decode(x);
    w->n = 1;
    w->flags = (uint16_t)special_flags(&d);
    if (d.kind != K_FINITE) {
        w->lo = 0;
        w->hi = 0;
        w->t = T_NONE;
        w->l = L_NONE;
        return;
    }
    int tz = __builtin_ctzll(d.m);
    uint64_t m = d.m >> tz;
    w->l = (int16_t)(d.q + tz);
    w->t = (int16_t)(d.q + tz + 63 - __builtin_clzll(m));
    w->lo = d.neg ? (uint64_t)0 - m : m;
    w->hi = d.neg ? -1 : 0;
}

void ml_win_add(const ml_win *a, ml_win *b)
{
    unsigned flags = a->flags | b->flags;
    unsigned n = (unsigned)a->n + b->n;
    b->n = (uint16_t)(n > 65535 ? 65535 : n);
    if (a->t != T_NONE && b->t == T_NONE) {
        b->lo = a->lo;
        b->hi = a->hi;
        b->t = a->t;
        b->l = a->l;
    } else if (a->t != T_NONE) {
        int t = a->t > b->t ? a->t : b->t;
        int l = a->l < b->l ? a->l : b->l;
        u128 ma = ((u128)(uint64_t)a->hi << 64) | a->lo;
        u128 mb = ((u128)(uint64_t)b->hi << 64) | b->lo;
        if (t - l + 1 + bitlen(b->n) <= 126) {
            u128 s = (ma << (a->l - l)) + (mb << (b->l - l));
            b->lo = (uint64_t)s;
            b->hi = (int64_t)(uint64_t)(s >> 64);
        }
        b->t = (int16_t)t;
        b->l = (int16_t)l;
    }
    /* The predicate depends only on the multiset (max t, min l, n), and grows
     * monotonically with it: every combination order gives the same flag. */
    if (b->t != T_NONE && b->t - b->l + 1 + bitlen(b->n) > 126)
        flags |= ML_XS_INEXACT;
    b->flags = (uint16_t)flags;
    if (flags & (SPECIAL | ML_XS_INEXACT)) {   /* the mantissa is meaningless: canonical 0 */
        b->lo = 0;
        b->hi = 0;
    }
}

double ml_xs_round_i128(int64_t hi, uint64_t lo, int l, ml_xs_fmt fmt)
{
    u128 m = ((u128)(uint64_t)hi << 64) | lo;
    if (m == 0)
        return 0.0;
    int neg = hi < 0;
    if (neg)
        m = -m;
    int b = top_bit128(m);
    uint64_t top;
    int sticky = 0;
    if (b >= 63) {
        top = (uint64_t)(m >> (b - 63));
        sticky = b > 63 && (m & (((u128)1 << (b - 63)) - 1)) != 0;
    } else {
        top = (uint64_t)m << (63 - b);
    }
    return round_bits(top, sticky, l + b, neg, fmt);
}

int ml_win_round(const ml_win *w, ml_xs_fmt fmt, double *r)
{
    if (special_result(w->flags, r))
        return 0;
    if (w->flags & ML_XS_INEXACT)
        return -1;
    if (w->t == T_NONE || (w->lo == 0 && w->hi == 0)) {
        *r = signed_zero(w->flags);
        return 0;
    }
    *r = ml_xs_round_i128(w->hi, w->lo, w->l, fmt);
    return 0;
}

/* ---- ml_acc ---------------------------------------------------------- */

static void acc_normalise(int64_t *d)
{
    for (int i = 0; i < ML_ACC_DIGITS - 1; i++) {
        int64_t c = d[i] >> 32;               /* floor division by 2^32 */
        d[i] -= c * ((int64_t)1 << 32);
        d[i + 1] += c;
    }
}

void ml_acc_from_double(ml_acc *a, double x)
{
    memset(a, 0, sizeof *a);
    decoded d = decode(x);
    a->flags = special_flags(&d);
    if (d.kind != K_FINITE)
        return;
    int pos = d.q - ML_ACC_BASE;              /* >= 14 */
    u128 v = (u128)d.m << (pos % 32);
    int i = pos / 32;
    int64_t s = d.neg ? -1 : 1;
    a->d[i] = s * (int64_t)(uint64_t)(v & 0xffffffffu);
    a->d[i + 1] = s * (int64_t)(uint64_t)((v >> 32) & 0xffffffffu);
    a->d[i + 2] = s * (int64_t)(uint64_t)(v >> 64);
    if (d.neg)
        acc_normalise(a->d);
}

void ml_acc_add(const ml_acc *in, ml_acc *io)
{
    for (int i = 0; i < ML_ACC_DIGITS; i++)
        io->d[i] += in->d[i];
    acc_normalise(io->d);
    io->flags |= in->flags;
}

double ml_acc_round(const ml_acc *a, ml_xs_fmt fmt)
{
    double r;
    if (special_result((unsigned)a->flags, &r))
        return r;
    int64_t d[ML_ACC_DIGITS];
    memcpy(d, a->d, sizeof d);
    int neg = d[ML_ACC_DIGITS - 1] < 0;
    if (neg) {
        for (int i = 0; i < ML_ACC_DIGITS; i++)
            d[i] = -d[i];
        acc_normalise(d);
    }
    int h = ML_ACC_DIGITS - 1;
    while (h >= 0 && d[h] == 0)
        h--;
    if (h < 0)
        return signed_zero((unsigned)a->flags);
    u128 v = ((u128)(uint64_t)d[h] << 64)
           | ((u128)(uint64_t)(h >= 1 ? d[h - 1] : 0) << 32)
           | (uint64_t)(h >= 2 ? d[h - 2] : 0);
    int sticky = 0;
    for (int i = 0; i < h - 2; i++)
        sticky |= d[i] != 0;
    int b = top_bit128(v);
    uint64_t top;
    if (b >= 63) {
        top = (uint64_t)(v >> (b - 63));
        sticky |= (v & (((u128)1 << (b - 63)) - 1)) != 0;
    } else {
        top = (uint64_t)v << (63 - b);
    }
    return round_bits(top, sticky, b + 32 * (h - 2) + ML_ACC_BASE, neg, fmt);
}

double ml_xs_sum(const double *x, int n, ml_xs_fmt fmt)
{
    ml_acc acc, one;
    ml_acc_from_double(&acc, n > 0 ? x[0] : 0.0);
    for (int i = 1; i < n; i++) {
        ml_acc_from_double(&one, x[i]);
        ml_acc_add(&one, &acc);
    }
    return ml_acc_round(&acc, fmt);
}
