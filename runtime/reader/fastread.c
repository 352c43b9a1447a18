/* The profile reader's fast path (docs/scale.md, "The fast path"): scans the rank
 * lines of an mpilens profile (docs/profile-format.md) and folds them straight into
 * arrays, without making a Python object of any value.
 *
 * Loaded by python/mpilens/report/fastread.py with ctypes.  It accepts only lines it
 * reads exactly as the Python reader does (report/profile.py, validate.py): plain
 * ASCII strings without escapes, numbers of the JSON grammar, every value of a known
 * key in range, no duplicate known key.  At the first line it does
 * not accept it stops (ML_FR_REFUSED) and the caller reads the whole file again with
 * the Python reader, which stays the reference and names what is wrong in one line.
 *
 * Folds (the same order of additions as the Python reader, so sums are identical):
 * per rank its figures and per function its time and calls (RankTable), per function
 * the exact sums, the sent peers as sparse triples, call sites, communicators,
 * dropped counts; the time lines are staged per group (bin width, bins, classes) and
 * handed back every 256 lines for the numpy fold of report/timeline.py; and, when
 * ml_fr_advise asks for it, advise's view (advise/ranks.py: the same arrays as its
 * Python fold), so that advise too reads the file once.
 *
 * Plain C11; no global state; every exported symbol is ml_fr_-prefixed. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ML_FR_OK = 0, ML_FR_FLUSH = 1, ML_FR_REFUSED = 2, ML_FR_NOMEM = 3 };
enum { NBINS = 25, BATCH = 256, MAX_SKIP_DEPTH = 32, MAX_STRINGS = 1 << 20 };
#define MAX_FUNCS 1024

typedef struct { void *p; size_t n, cap, sz; } vec_t;

static int vgrow(vec_t *v, size_t want) {
    if (want <= v->cap) return 0;
    size_t cap = v->cap ? v->cap : 64;
    while (cap < want) cap *= 2;
    void *p = realloc(v->p, cap * v->sz);
    if (!p) return -1;
    v->p = p;
    v->cap = cap;
    return 0;
}
static int vpush(vec_t *v, const void *x) {
    if (vgrow(v, v->n + 1)) return -1;
    memcpy((char *)v->p + v->n * v->sz, x, v->sz);
    v->n++;
    return 0;
}
#define VAT(v, T, i) (((T *)(v).p)[i])
#define VINIT(T) ((vec_t){NULL, 0, 0, sizeof(T)})

/* ---- interning: byte strings (and u64 tuples as bytes) -> dense ids ---- */
typedef struct { uint64_t h; uint32_t off, len; int32_t id; } slot_t;
typedef struct {
    slot_t *slots; size_t cap, n;
    vec_t bytes;   /* char: every key, back to back */
    vec_t offs;    /* uint32 pairs (off, len) per id */
} intern_t;

static uint64_t hash(const void *k, size_t n) {
    const unsigned char *p = k;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
    return h ^ (h >> 29);
}

static int intern_init(intern_t *t) {
    t->cap = 256;
    t->n = 0;
    t->slots = calloc(t->cap, sizeof(slot_t));
    t->bytes = VINIT(char);
    t->offs = VINIT(uint32_t);
    return t->slots ? 0 : -1;
}
static void intern_free(intern_t *t) { free(t->slots); free(t->bytes.p); free(t->offs.p); }

static int intern_rehash(intern_t *t) {
    size_t cap = t->cap * 2;
    slot_t *s = calloc(cap, sizeof(slot_t));
    if (!s) return -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->slots[i].len && !t->slots[i].id) continue;
        size_t j = t->slots[i].h & (cap - 1);
        while (s[j].len || s[j].id) j = (j + 1) & (cap - 1);
        s[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = s;
    t->cap = cap;
    return 0;
}

/* id of key (created if new, *fresh set); -1 when out of memory.  Slot ids are
 * stored +1 so that a zero slot is empty. */
static int32_t intern(intern_t *t, const void *key, size_t len, int *fresh) {
    uint64_t h = hash(key, len);
    size_t j = h & (t->cap - 1);
    for (;;) {
        slot_t *s = &t->slots[j];
        if (!s->id) break;
        if (s->h == h && s->len == len &&
            !memcmp((char *)t->bytes.p + s->off, key, len))
            return s->id - 1;
        j = (j + 1) & (t->cap - 1);
    }
    if (t->n >= MAX_STRINGS || t->bytes.n + len > 0xffffffffu) return -1;
    if ((t->n + 1) * 2 > t->cap) {
        if (intern_rehash(t)) return -1;
        return intern(t, key, len, fresh);
    }
    if (vgrow(&t->bytes, t->bytes.n + len + 1)) return -1;
    uint32_t off = (uint32_t)t->bytes.n;
    memcpy((char *)t->bytes.p + off, key, len);
    t->bytes.n += len;
    uint32_t ol[2] = {off, (uint32_t)len};
    if (vpush(&t->offs, &ol[0]) || vpush(&t->offs, &ol[1])) return -1;
    int32_t id = (int32_t)t->n++;
    t->slots[j] = (slot_t){h, off, (uint32_t)len, id + 1};
    if (fresh) *fresh = 1;
    return id;
}

/* ---- folds ---- */
typedef struct {           /* one function column */
    int32_t name;          /* string id */
    double *time; uint64_t *calls; uint8_t *present;
    int has_sum; int32_t sum_order;
    uint64_t s_calls, s_sent, s_recv; double s_time;
} col_t;

typedef struct {           /* one call site (function, frames) */
    int64_t key;           /* id in the key table */
    int32_t fn; int hist_len;
    uint64_t calls, sent, recv, hist[NBINS];
    double time;
    vec_t rank, rcalls, rtime; /* int64, uint64, double */
} site_t;

typedef struct {           /* one communicator description */
    uint64_t records, calls, sent, recv;
    double time;
    int32_t kind, name;    /* string ids; name -1: absent */
    int64_t size;          /* -1: absent */
    int inter;
    int32_t chain_off, chain_len; /* kinds of the parent chain, in chains */
} comm_t;

typedef struct {           /* one region (by name) */
    int32_t name, parent;  /* string ids; parent -1: none (of its first record) */
    uint64_t ranks, entries;
    double wall;
    vec_t fns;             /* int32: its functions (indices in rfns), first seen first */
} region_t;

typedef struct {           /* one function of one region */
    int32_t name;
    uint64_t calls, sent, recv;
    double time;
} rfn_t;

typedef struct {           /* a time-line group (bin width, bins, classes) */
    double bin_s; int32_t nb, width;
    int32_t classes_off;   /* in tl_classes */
    vec_t ranks, calls, time, bytes; /* staged lines: int64, uint64, double, uint64 */
    int32_t k;
} tgroup_t;

typedef struct {
    int64_t nranks, count;
    int status;
    intern_t str;          /* every string */
    intern_t keys;         /* call-site, communicator and time-line keys (u64 tuples) */
    vec_t key_kind;        /* int32 per key: 0 site, 1 comm, 2 time-line group */
    vec_t key_index;       /* int32 per key: index in sites / comms / groups */
    vec_t name_ok;         /* int8 per string: 0 unknown, 1 function name, 2 not */
    vec_t col_of;          /* int32 per string: column, -1 none */
    vec_t host_of;         /* int32 per string: host index, -1 none */
    vec_t hosts;           /* int32 string ids in order */
    col_t cols[MAX_FUNCS]; int32_t ncols, nsums;
    double *wall, *mpi, *top_s; int64_t *node; int32_t *host, *top;
    uint64_t *calls, *sent, *recv, *p2p;
    vec_t src, dst, msgs, nbytes;
    vec_t sites;           /* site_t */
    int callsites_present;
    uint64_t d_calls, d_sent, d_recv; double d_time;
    vec_t comms, chains;   /* comm_t, int32 */
    uint64_t comms_dropped, r_labels, r_calls, r_unmatched;
    vec_t groups, tl_classes; /* tgroup_t, int32 */
    vec_t regions, rfns;   /* region_t, rfn_t */
    int32_t staged;
    int32_t outside[3];    /* string ids of MPI_Init, MPI_Init_thread, MPI_Finalize */
    int32_t qmark;         /* string id of "?" */
    int32_t other;         /* string id of "other" (a communicator kind) */
    struct adv *adv;       /* advise's view (ml_fr_advise), NULL: not folded */
} fr_t;

/* ---- the scanner ---- */
typedef struct { const char *p, *e; } cur_t;

static inline void ws(cur_t *c) {
    while (c->p < c->e && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r')) c->p++;
}
static inline int eat(cur_t *c, char ch) {
    ws(c);
    if (c->p < c->e && *c->p == ch) { c->p++; return 1; }
    return 0;
}
static inline int peek(cur_t *c, char ch) { ws(c); return c->p < c->e && *c->p == ch; }

/* a string: printable ASCII, no escape (else refused) */
static int str(cur_t *c, const char **s, size_t *n) {
    ws(c);
    if (c->p >= c->e || *c->p != '"') return -1;
    const char *q = ++c->p;
    while (q < c->e && *q != '"') {
        unsigned char b = (unsigned char)*q;
        if (b < 0x20 || b >= 0x7f || b == '\\') return -1;
        q++;
    }
    if (q >= c->e) return -1;
    *s = c->p;
    *n = (size_t)(q - c->p);
    c->p = q + 1;
    return 0;
}

/* 10^0 .. 10^22: exact doubles */
static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
                               1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19,
                               1e20, 1e21, 1e22};

/* a number of the JSON grammar: *isint, the integer (if it has no fraction or
 * exponent and fits 64 bits unsigned: else *big), the value as a double: strtod's
 * (correctly rounded).  Without strtod where the result is exact anyway: an integer
 * below 2^64 is converted (correctly rounded); a decimal whose digits make an
 * integer w < 2^53 and whose power of ten e has |e| <= 22 is w * 10^e or w / 10^-e,
 * one correctly rounded operation on two exact doubles (Clinger's fast path) */
static int num(cur_t *c, int *isint, uint64_t *u, int *neg, double *d, int *big) {
    ws(c);
    const char *s = c->p, *q = s;
    *neg = 0;
    *big = 0;
    if (q < c->e && *q == '-') { *neg = 1; q++; }
    if (q >= c->e || *q < '0' || *q > '9') return -1;
    uint64_t v = 0;
    if (*q == '0') q++;
    else {
        while (q < c->e && *q >= '0' && *q <= '9') {
            unsigned dg = (unsigned)(*q - '0');
            if (v > (UINT64_MAX - dg) / 10) *big = 1;
            v = v * 10 + dg;
            q++;
        }
    }
    int frac = 0, exact = !*big && v < ((uint64_t)1 << 53);
    uint64_t w = v;        /* all the digits, while exact */
    long e10 = 0;          /* the power of ten of w */
    if (q < c->e && *q == '.') {
        frac = 1;
        q++;
        if (q >= c->e || *q < '0' || *q > '9') return -1;
        while (q < c->e && *q >= '0' && *q <= '9') {
            if (exact) {
                w = w * 10 + (unsigned)(*q - '0');
                e10--;
                if (w >= ((uint64_t)1 << 53)) exact = 0;
            }
            q++;
        }
    }
    if (q < c->e && (*q == 'e' || *q == 'E')) {
        frac = 1;
        q++;
        int eneg = 0;
        if (q < c->e && (*q == '+' || *q == '-')) eneg = *q++ == '-';
        if (q >= c->e || *q < '0' || *q > '9') return -1;
        long x = 0;
        while (q < c->e && *q >= '0' && *q <= '9') {
            if (x < 100000) x = x * 10 + (*q - '0');
            q++;
        }
        e10 += eneg ? -x : x;
    }
    if (q - s > 64) return -1;
    *isint = !frac;
    *u = v;
    if (!frac && !*big) *d = *neg ? -(double)v : (double)v;
    else if (frac && exact && e10 >= -22 && e10 <= 22) {
        double m = (double)w;
        m = e10 < 0 ? m / POW10[-e10] : m * POW10[e10];
        *d = *neg ? -m : m;
    } else {
        char buf[72];
        memcpy(buf, s, (size_t)(q - s));
        buf[q - s] = 0;
        *d = strtod(buf, NULL);
    }
    c->p = q;
    return 0;
}

/* a count: an integer from 0 to hi */
static int count(cur_t *c, uint64_t hi, uint64_t *out) {
    int isint, neg, big;
    uint64_t u;
    double d;
    if (num(c, &isint, &u, &neg, &d, &big) || !isint || big || (neg && u) || u > hi) return -1;
    *out = u;
    return 0;
}
/* a time: a finite number >= 0 (an integer of at most 19 digits: as Python's float()) */
static int timev(cur_t *c, double *out) {
    int isint, neg, big;
    uint64_t u;
    double d;
    if (num(c, &isint, &u, &neg, &d, &big)) return -1;
    if (isint && big) return -1;
    if (isint) {          /* Python: float(int), correctly rounded; "-0" is 0, not -0.0 */
        if (neg && u) return -1;
        d = (double)u;
    }
    if (!(d >= 0) || !isfinite(d)) return -1;
    *out = d;
    return 0;
}

static int lit(cur_t *c, const char *w) {
    ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->e - c->p) < n || memcmp(c->p, w, n)) return -1;
    c->p += n;
    return 0;
}

/* any JSON value (of a key the reader ignores), checked and skipped */
static int skip(cur_t *c, int depth) {
    ws(c);
    if (c->p >= c->e || depth > MAX_SKIP_DEPTH) return -1;
    char ch = *c->p;
    if (ch == '"') { const char *s; size_t n; return str(c, &s, &n); }
    if (ch == 't') return lit(c, "true");
    if (ch == 'f') return lit(c, "false");
    if (ch == 'n') return lit(c, "null");
    if (ch == '[' || ch == '{') {
        char close = ch == '[' ? ']' : '}';
        c->p++;
        if (eat(c, close)) return 0;
        do {
            if (ch == '{') {
                const char *s; size_t n;
                if (str(c, &s, &n) || !eat(c, ':')) return -1;
            }
            if (skip(c, depth + 1)) return -1;
        } while (eat(c, ','));
        return eat(c, close) ? 0 : -1;
    }
    int isint, neg, big; uint64_t u; double d;
    return num(c, &isint, &u, &neg, &d, &big);
}

#define KEY(s, n, lit_) ((n) == sizeof(lit_) - 1 && !memcmp((s), lit_, sizeof(lit_) - 1))

/* iterate an object's keys: OBJ(c) { ... key s,n ... } */
#define OBJ_BEGIN(c) if (!eat(c, '{')) return -1; if (!eat(c, '}')) { do { const char *ks; size_t kn; \
        if (str(c, &ks, &kn) || !eat(c, ':')) return -1;
#define OBJ_END(c) } while (eat(c, ',')); if (!eat(c, '}')) return -1; }
#define ARR_BEGIN(c) if (!eat(c, '[')) return -1; if (!eat(c, ']')) { do {
#define ARR_END(c) } while (eat(c, ',')); if (!eat(c, ']')) return -1; }
#define ONCE(bit) do { if (seen & (1ull << (bit))) return -1; seen |= 1ull << (bit); } while (0)

static int32_t sid(fr_t *f, const char *s, size_t n) {
    int fresh = 0;
    int32_t id = intern(&f->str, s, n, &fresh);
    if (id < 0) return -1;
    if (fresh) {
        int8_t z = 0;
        int32_t m = -1;
        if (vpush(&f->name_ok, &z) || vpush(&f->col_of, &m) || vpush(&f->host_of, &m)) return -1;
    }
    return id;
}

/* up to 4 counts */
static int counts_list(cur_t *c, uint64_t *out, int want, uint64_t hi) {
    int i = 0;
    ARR_BEGIN(c)
        uint64_t v;
        if (i >= want || count(c, i == 0 ? hi : UINT64_MAX, &v)) return -1;
        out[i++] = v;
    ARR_END(c)
    return i == want ? 0 : -1;
}
static int hist(cur_t *c, uint64_t *out) {
    int i = 0;
    ARR_BEGIN(c)
        if (i >= NBINS || count(c, UINT64_MAX, &out[i])) return -1;
        i++;
    ARR_END(c)
    return i == NBINS ? 0 : -1;
}

static int add_u64(uint64_t *a, uint64_t b) {
    if (*a > UINT64_MAX - b) return -1; /* an exact sum beyond 64 bits: the Python path */
    *a += b;
    return 0;
}
static uint64_t clamp(unsigned __int128 v) { return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v; }

/* ---- advise's view (advise/ranks.py, the load-time view "advise"): per rank
 * cpus_online, affinity, late_arrival; per function with bytes the rank's bytes_sent
 * and bytes_recv; the peers.recv triples; the call sites of the collectives advise
 * splits by size.  Folded only when ml_fr_advise turned it on; the same arrays, in
 * the same order, as ranks._Fold builds from the parsed lines.  A value _Fold would
 * read differently (a float where it takes int(), a non-string affinity, ...) is
 * refused: the Python reader reads the file. ---- */
enum { ADV_SITE_FNS = 16, ADV_NVEC = 24 };
enum {                     /* the arrays of ml_fr_advise_array, in its order */
    A_CPUS, A_AFF, A_LA, A_LA_INT, A_LA_GAP, A_LA_WHY,     /* per rank */
    A_FB_COL, A_FB_RANK, A_FB_SENT, A_FB_RECV,             /* per (rank, function) with bytes */
    A_RV_RANK, A_RV_PEER, A_RV_MSGS, A_RV_BYTES,           /* peers.recv */
    A_S_RANK, A_S_FI, A_S_CALLS, A_S_TIME, A_S_SENT, A_S_RECV, A_S_HLEN, /* sites */
    A_H_SITE, A_H_BIN, A_H_COUNT                           /* the sites' non-zero bins */
};
static const size_t ADV_SZ[ADV_NVEC] = {8, 4, 1, 8, 8, 4, 4, 8, 8, 8, 8, 8, 8, 8,
                                        8, 4, 8, 8, 8, 8, 4, 8, 4, 8};

typedef struct adv {
    vec_t v[ADV_NVEC];
    intern_t strs;         /* affinity and late_arrival.why, first seen first */
    int32_t site_sid[ADV_SITE_FNS], site_fi[ADV_SITE_FNS], nsite, nfi;
    /* the line being read */
    int64_t cpus;
    int has_aff, la;
    const char *aff_s, *why_s; size_t aff_n, why_n;
    int64_t la_int[4];
    double gap;
} adv_t;

static void adv_free(adv_t *a) {
    if (!a) return;
    for (int i = 0; i < ADV_NVEC; i++) free(a->v[i].p);
    intern_free(&a->strs);
    free(a);
}

static adv_t *adv_new(void) {
    adv_t *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    for (int i = 0; i < ADV_NVEC; i++) a->v[i] = (vec_t){NULL, 0, 0, ADV_SZ[i]};
    if (intern_init(&a->strs)) { free(a); return NULL; }
    return a;
}

static void adv_begin(adv_t *a) {
    a->cpus = -1;
    a->has_aff = a->la = 0;
    a->why_s = "";
    a->why_n = 0;
    memset(a->la_int, 0, sizeof a->la_int);
    a->gap = 0.0;
}

/* an integer of 0 .. 2^63-1 (ranks._Fold's int() into a signed 64-bit array) */
static int adv_int(cur_t *c, int64_t *out) {
    uint64_t u;
    if (count(c, (uint64_t)INT64_MAX, &u)) return -1;
    *out = (int64_t)u;
    return 0;
}

/* a finite number, as Python's float() of the parsed value */
static int adv_float(cur_t *c, double *out) {
    int isint, neg, big;
    uint64_t u;
    double d;
    if (num(c, &isint, &u, &neg, &d, &big) || (isint && big)) return -1;
    if (isint) d = neg && u ? -(double)u : (double)u; /* float(int): "-0" is 0.0 */
    if (!isfinite(d)) return -1;
    *out = d;
    return 0;
}

static int adv_late(adv_t *a, cur_t *c) {
    if (!peek(c, '{')) { a->la = 0; return skip(c, 2); } /* not an object: absent */
    static const char *const K[] = {"sampled", "every", "clear", "last_clear"};
    uint64_t seen = 0;
    a->la = 1;
    OBJ_BEGIN(c)
        int b = -1;
        for (int i = 0; i < 4; i++)
            if (strlen(K[i]) == kn && !memcmp(ks, K[i], kn)) b = i;
        if (b >= 0) { ONCE(b); if (adv_int(c, &a->la_int[b])) return -1; }
        else if (KEY(ks, kn, "gap_s")) { ONCE(4); if (adv_float(c, &a->gap)) return -1; }
        else if (KEY(ks, kn, "why")) { ONCE(5); if (str(c, &a->why_s, &a->why_n)) return -1; }
        else if (skip(c, 3)) return -1;
    OBJ_END(c)
    return 0;
}

/* a rank line's key advise reads: 1 read, 0 not one of them, -1 refused */
static int adv_key(adv_t *a, cur_t *c, const char *ks, size_t kn, uint64_t *seenp) {
    uint64_t seen = *seenp;
    int rc = 0;
    if (KEY(ks, kn, "cpus_online")) { ONCE(40); rc = adv_int(c, &a->cpus) ? -1 : 1; }
    else if (KEY(ks, kn, "affinity")) {
        ONCE(41);
        a->has_aff = 1;
        rc = str(c, &a->aff_s, &a->aff_n) ? -1 : 1;
    } else if (KEY(ks, kn, "late_arrival")) { ONCE(42); rc = adv_late(a, c) ? -1 : 1; }
    *seenp = seen;
    return rc;
}

static int adv_recv(adv_t *a, int64_t rank, const uint64_t e[3]) {
    int64_t peer = (int64_t)e[0];
    return vpush(&a->v[A_RV_RANK], &rank) || vpush(&a->v[A_RV_PEER], &peer) ||
           vpush(&a->v[A_RV_MSGS], &e[1]) || vpush(&a->v[A_RV_BYTES], &e[2]) ? -1 : 0;
}

/* ---- one line ---- */
typedef struct { int32_t name, col; uint64_t calls, sent, recv, p2p[4]; double time; int has_p2p[2]; } lfn_t;
typedef struct { int32_t fn; int32_t fr_off, fr_n; uint64_t calls, sent, recv, hist[NBINS]; double time; int has_hist; } lsite_t;
typedef struct { int64_t id, parent, size; int32_t kind, name; int inter, has_parent; uint64_t calls, sent, recv; double time; } lcomm_t;
typedef struct { int32_t name, parent, fn_off, fn_n; uint64_t entries; double wall; } lregion_t;
typedef struct { int32_t name; uint64_t u[4]; double time; } lrfn_t;

typedef struct {
    vec_t fns, sites, frames, mods, comms; /* lfn_t, lsite_t, uint64 pairs, int32, lcomm_t */
    vec_t regions, rfns;   /* lregion_t, lrfn_t */
    vec_t tl_calls, tl_time, tl_bytes, tl_classes; /* uint64, double, uint64, int32 */
    vec_t idmap;           /* int32: the line's communicator ids (fold_line) */
} line_t;

static int name_is_function(fr_t *f, int32_t id, const char *s, size_t n) {
    int8_t *ok = &VAT(f->name_ok, int8_t, id);
    if (!*ok) {
        int good = n > 4 && !memcmp(s, "MPI_", 4);
        for (size_t i = 4; good && i < n; i++) {
            char ch = s[i];
            good = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_';
        }
        *ok = good ? 1 : 2;
    }
    return *ok == 1;
}

static int32_t column(fr_t *f, int32_t name) {
    int32_t *c = &VAT(f->col_of, int32_t, name);
    if (*c >= 0) return *c;
    if (f->ncols >= MAX_FUNCS) return -1;
    col_t *col = &f->cols[f->ncols];
    memset(col, 0, sizeof *col);
    col->name = name;
    size_t n = (size_t)f->nranks;
    col->time = calloc(n, sizeof(double));
    col->calls = calloc(n, sizeof(uint64_t));
    col->present = calloc(n, 1);
    if (!col->time || !col->calls || !col->present) return -1;
    *c = f->ncols++;
    return *c;
}

static int function_entry(fr_t *f, cur_t *c, lfn_t *o) {
    uint64_t seen = 0, v, h[NBINS], p[4];
    double t;
    o->calls = o->sent = o->recv = 0;
    o->time = 0.0;
    o->has_p2p[0] = o->has_p2p[1] = 0;
    memset(o->p2p, 0, sizeof o->p2p);
    (void)f;
    OBJ_BEGIN(c)
        if (KEY(ks, kn, "calls")) { ONCE(0); if (count(c, UINT64_MAX, &o->calls)) return -1; }
        else if (KEY(ks, kn, "bytes_sent")) { ONCE(1); if (count(c, UINT64_MAX, &o->sent)) return -1; }
        else if (KEY(ks, kn, "bytes_recv")) { ONCE(2); if (count(c, UINT64_MAX, &o->recv)) return -1; }
        else if (KEY(ks, kn, "time_s")) { ONCE(3); if (timev(c, &o->time)) return -1; }
        else if (KEY(ks, kn, "timed_calls")) { ONCE(4); if (count(c, UINT64_MAX, &v)) return -1; }
        else if (KEY(ks, kn, "repro_calls")) { ONCE(5); if (count(c, UINT64_MAX, &v)) return -1; }
        else if (KEY(ks, kn, "hist_send_bytes")) { ONCE(6); if (count(c, UINT64_MAX, &v)) return -1; }
        else if (KEY(ks, kn, "time_min_s")) { ONCE(7); if (timev(c, &t)) return -1; }
        else if (KEY(ks, kn, "time_max_s")) { ONCE(8); if (timev(c, &t)) return -1; }
        else if (KEY(ks, kn, "hist_send")) { ONCE(9); if (hist(c, h)) return -1; }
        else if (KEY(ks, kn, "hist_recv")) { ONCE(10); if (hist(c, h)) return -1; }
        else if (KEY(ks, kn, "p2p_intra_node")) {
            ONCE(11);
            if (counts_list(c, p, 4, UINT64_MAX)) return -1;
            o->p2p[0] = p[0]; o->p2p[1] = p[1]; o->has_p2p[0] = 1;
        } else if (KEY(ks, kn, "p2p_inter_node")) {
            ONCE(12);
            if (counts_list(c, p, 4, UINT64_MAX)) return -1;
            o->p2p[2] = p[0]; o->p2p[3] = p[1]; o->has_p2p[1] = 1;
        } else if (KEY(ks, kn, "node_span")) {
            ONCE(13);
            uint64_t s2 = 0;
            uint64_t seen2 = 0;
            OBJ_BEGIN(c)
                int b = KEY(ks, kn, "one_node") ? 0 : KEY(ks, kn, "multi_node") ? 1
                      : KEY(ks, kn, "max_nodes") ? 2 : KEY(ks, kn, "max_ranks_per_node") ? 3 : -1;
                if (b < 0) { if (skip(c, 3)) return -1; }
                else { if (seen2 & (1u << b)) return -1; seen2 |= 1u << b; if (count(c, UINT64_MAX, &s2)) return -1; }
            OBJ_END(c)
        } else if (skip(c, 2)) return -1;
    OBJ_END(c)
    return 0;
}

static int functions(fr_t *f, cur_t *c, line_t *L) {
    L->fns.n = 0;
    OBJ_BEGIN(c)
        int32_t name = sid(f, ks, kn);
        if (name < 0 || !name_is_function(f, name, ks, kn)) return -1;
        for (size_t i = 0; i < L->fns.n; i++)
            if (VAT(L->fns, lfn_t, i).name == name) return -1; /* a duplicate name */
        lfn_t o;
        if (function_entry(f, c, &o)) return -1;
        o.name = name;
        if ((o.col = column(f, name)) < 0 || vpush(&L->fns, &o)) return -1;
    OBJ_END(c)
    return 0;
}

static int peers(fr_t *f, cur_t *c, int64_t rank) {
    uint64_t seen = 0;
    OBJ_BEGIN(c)
        int side = KEY(ks, kn, "sent") ? 0 : KEY(ks, kn, "recv") ? 1 : -1;
        if (side < 0) { if (skip(c, 2)) return -1; continue; }
        ONCE(side);
        ARR_BEGIN(c)
            uint64_t e[3];
            if (counts_list(c, e, 3, (uint64_t)(f->nranks - 1))) return -1;
            if (side == 0) {
                int64_t r = rank, d = (int64_t)e[0];
                if (vpush(&f->src, &r) || vpush(&f->dst, &d) || vpush(&f->msgs, &e[1]) ||
                    vpush(&f->nbytes, &e[2])) return -1;
            } else if (f->adv && adv_recv(f->adv, rank, e)) return -1;
        ARR_END(c)
    OBJ_END(c)
    return 0;
}

static int strings(fr_t *f, cur_t *c, vec_t *out) {
    out->n = 0;
    ARR_BEGIN(c)
        const char *s; size_t n;
        if (str(c, &s, &n)) return -1;
        int32_t id = sid(f, s, n);
        if (id < 0 || vpush(out, &id)) return -1;
    ARR_END(c)
    return 0;
}

static int callsites(fr_t *f, cur_t *c, line_t *L) {
    L->sites.n = L->frames.n = 0;
    ARR_BEGIN(c)
        lsite_t o;
        memset(&o, 0, sizeof o);
        o.fn = -1;
        o.fr_off = (int32_t)(L->frames.n / 2);
        uint64_t seen = 0, v;
        int has_frames = 0;
        OBJ_BEGIN(c)
            if (KEY(ks, kn, "function")) {
                ONCE(0);
                const char *s; size_t n;
                if (str(c, &s, &n) || (o.fn = sid(f, s, n)) < 0) return -1;
            } else if (KEY(ks, kn, "frames")) {
                ONCE(1);
                has_frames = 1;
                ARR_BEGIN(c)
                    uint64_t fr[2];
                    if (counts_list(c, fr, 2, UINT64_MAX) || vpush(&L->frames, &fr[0]) ||
                        vpush(&L->frames, &fr[1])) return -1;
                    o.fr_n++;
                ARR_END(c)
            } else if (KEY(ks, kn, "calls")) { ONCE(2); if (count(c, UINT64_MAX, &o.calls)) return -1; }
            else if (KEY(ks, kn, "time_s")) { ONCE(3); if (timev(c, &o.time)) return -1; }
            else if (KEY(ks, kn, "bytes_sent")) { ONCE(4); if (count(c, UINT64_MAX, &o.sent)) return -1; }
            else if (KEY(ks, kn, "bytes_recv")) { ONCE(5); if (count(c, UINT64_MAX, &o.recv)) return -1; }
            else if (KEY(ks, kn, "timed_calls")) { ONCE(6); if (count(c, UINT64_MAX, &v)) return -1; }
            else if (KEY(ks, kn, "hist")) { ONCE(7); o.has_hist = 1; if (hist(c, o.hist)) return -1; }
            else if (skip(c, 3)) return -1;
        OBJ_END(c)
        /* required: function, frames, calls, time_s, bytes_sent, bytes_recv */
        if ((seen & 0x3f) != 0x3f || !has_frames) return -1;
        if (vpush(&L->sites, &o)) return -1;
    ARR_END(c)
    return 0;
}

static int counts_obj(cur_t *c, const char *const *keys, int nk, uint64_t *u, double *t) {
    uint64_t seen = 0;
    OBJ_BEGIN(c)
        int b = -1;
        for (int i = 0; i < nk; i++)
            if (strlen(keys[i]) == kn && !memcmp(ks, keys[i], kn)) b = i;
        if (b < 0) { if (skip(c, 2)) return -1; continue; }
        ONCE(b);
        size_t kl = strlen(keys[b]);
        if (kl > 2 && !memcmp(keys[b] + kl - 2, "_s", 2)) { if (timev(c, t)) return -1; }
        else if (count(c, UINT64_MAX, &u[b])) return -1;
    OBJ_END(c)
    return 0;
}

static const char *const FOUR[] = {"calls", "time_s", "bytes_sent", "bytes_recv"};

static int regions(fr_t *f, cur_t *c, line_t *L) {
    ARR_BEGIN(c)
        lregion_t o;
        memset(&o, 0, sizeof o);
        o.name = o.parent = -1;
        o.fn_off = (int32_t)L->rfns.n;
        uint64_t seen = 0;
        OBJ_BEGIN(c)
            const char *s; size_t n;
            if (KEY(ks, kn, "name")) {
                ONCE(0);
                if (str(c, &s, &n) || (o.name = sid(f, s, n)) < 0) return -1;
            } else if (KEY(ks, kn, "parent")) {
                ONCE(1);
                if (peek(c, 'n')) { if (lit(c, "null")) return -1; o.parent = -1; }
                else if (str(c, &s, &n) || (o.parent = sid(f, s, n)) < 0) return -1;
            } else if (KEY(ks, kn, "entries")) { ONCE(2); if (count(c, UINT64_MAX, &o.entries)) return -1; }
            else if (KEY(ks, kn, "wall_s")) { ONCE(3); if (timev(c, &o.wall)) return -1; }
            else if (KEY(ks, kn, "functions")) {
                ONCE(4);
                OBJ_BEGIN(c)
                    lrfn_t r;
                    memset(&r, 0, sizeof r);
                    if ((r.name = sid(f, ks, kn)) < 0) return -1;
                    for (int32_t j = o.fn_off; j < (int32_t)L->rfns.n; j++)
                        if (VAT(L->rfns, lrfn_t, j).name == r.name) return -1; /* repeated */
                    if (counts_obj(c, FOUR, 4, r.u, &r.time) || vpush(&L->rfns, &r)) return -1;
                    o.fn_n++;
                OBJ_END(c)
            } else if (skip(c, 3)) return -1;
        OBJ_END(c)
        if ((seen & 0x1d) != 0x1d) return -1; /* name, entries, wall_s, functions */
        if (vpush(&L->regions, &o)) return -1;
    ARR_END(c)
    return 0;
}

static int comms(fr_t *f, cur_t *c, line_t *L) {
    L->comms.n = 0;
    ARR_BEGIN(c)
        lcomm_t o;
        memset(&o, 0, sizeof o);
        o.size = -1;
        o.name = -1;
        o.kind = -1;
        uint64_t seen = 0, v;
        OBJ_BEGIN(c)
            if (KEY(ks, kn, "id")) {
                ONCE(0);
                int isint, neg, big; uint64_t u; double d;
                if (num(c, &isint, &u, &neg, &d, &big) || !isint || big) return -1;
                if (neg ? u > 1 : u > 0x7fffffffu) return -1;
                o.id = neg ? -(int64_t)u : (int64_t)u;
            } else if (KEY(ks, kn, "kind")) {
                ONCE(1);
                const char *s; size_t n;
                if (str(c, &s, &n) || (o.kind = sid(f, s, n)) < 0) return -1;
            } else if (KEY(ks, kn, "name")) {
                ONCE(2);
                const char *s; size_t n;
                if (str(c, &s, &n) || (o.name = sid(f, s, n)) < 0) return -1;
            } else if (KEY(ks, kn, "parent")) {
                ONCE(3);
                if (peek(c, 'n')) { if (lit(c, "null")) return -1; }
                else { if (count(c, 0x7fffffffu, &v)) return -1; o.parent = (int64_t)v; o.has_parent = 1; }
            } else if (KEY(ks, kn, "size")) {
                ONCE(4);
                if (count(c, 0x7fffffffu, &v)) return -1;
                o.size = (int64_t)v;
            } else if (KEY(ks, kn, "inter")) {
                ONCE(5);
                if (peek(c, 't')) { if (lit(c, "true")) return -1; o.inter = 1; }
                else if (lit(c, "false")) return -1;
            } else if (KEY(ks, kn, "calls")) { ONCE(6); if (count(c, UINT64_MAX, &o.calls)) return -1; }
            else if (KEY(ks, kn, "time_s")) { ONCE(7); if (timev(c, &o.time)) return -1; }
            else if (KEY(ks, kn, "bytes_sent")) { ONCE(8); if (count(c, UINT64_MAX, &o.sent)) return -1; }
            else if (KEY(ks, kn, "bytes_recv")) { ONCE(9); if (count(c, UINT64_MAX, &o.recv)) return -1; }
            else if (skip(c, 3)) return -1;
        OBJ_END(c)
        /* required: id, kind, calls, time_s, bytes_sent, bytes_recv */
        if ((seen & 0x3c3) != 0x3c3) return -1;
        if (vpush(&L->comms, &o)) return -1;
    ARR_END(c)
    return 0;
}

/* rows of `width` values: counts (u) or times (t); *nrows counted */
static int rows(cur_t *c, vec_t *out, int times, int32_t width, int32_t *nrows) {
    out->n = 0;
    *nrows = 0;
    ARR_BEGIN(c)
        int32_t w = 0;
        ARR_BEGIN(c)
            if (times) { double t; if (timev(c, &t) || vpush(out, &t)) return -1; }
            else { uint64_t u; if (count(c, UINT64_MAX, &u) || vpush(out, &u)) return -1; }
            w++;
        ARR_END(c)
        if (width >= 0 && w != width) return -1;
        if (width < 0) width = w;
        (*nrows)++;
    ARR_END(c)
    return 0;
}

static int timeline(fr_t *f, cur_t *c, line_t *L, int *has, double *bin_s, int32_t *nb) {
    uint64_t seen = 0;
    int32_t n[3] = {-1, -1, -1};
    *has = 0;
    L->tl_classes.n = 0;
    OBJ_BEGIN(c)
        *has = 1;
        if (KEY(ks, kn, "bin_s")) { ONCE(0); if (timev(c, bin_s)) return -1; }
        else if (KEY(ks, kn, "classes")) { ONCE(1); if (strings(f, c, &L->tl_classes)) return -1; }
        else if (KEY(ks, kn, "calls")) { ONCE(2); if (rows(c, &L->tl_calls, 0, -1, &n[0])) return -1; }
        else if (KEY(ks, kn, "time_s")) { ONCE(3); if (rows(c, &L->tl_time, 1, -1, &n[1])) return -1; }
        else if (KEY(ks, kn, "bytes")) { ONCE(4); if (rows(c, &L->tl_bytes, 0, -1, &n[2])) return -1; }
        else if (skip(c, 2)) return -1;
    OBJ_END(c)
    if (!*has) return 0;
    if ((seen & 0x1f) != 0x1f || !(*bin_s > 0) || !L->tl_classes.n) return -1;
    if (n[0] < 1 || n[1] != n[0] || n[2] != n[0]) return -1;
    size_t cells = (size_t)n[0] * L->tl_classes.n;
    if (L->tl_calls.n != cells || L->tl_time.n != cells || L->tl_bytes.n != cells) return -1;
    *nb = n[0];
    return 0;
}

static int32_t key_of(fr_t *f, int kind, const uint64_t *k, size_t n, int *fresh) {
    uint64_t kb[1 + 1100]; /* the kind first: keys of two kinds never meet */
    if (n > 1100) return -1;
    kb[0] = (uint64_t)kind;
    memcpy(kb + 1, k, n * sizeof(uint64_t));
    int fr = 0;
    int32_t id = intern(&f->keys, kb, (n + 1) * sizeof(uint64_t), &fr);
    if (id < 0) return -1;
    if (fr) {
        int32_t kd = kind, ix = -1;
        if (vpush(&f->key_kind, &kd) || vpush(&f->key_index, &ix)) return -1;
    }
    *fresh = fr;
    return id;
}

/* the record of key kb (of a kind: call sites, communicators, time-line groups, regions,
 * their functions) in items: its index, a zeroed record appended when the key is new
 * (*fresh: the caller fills it in); -1 out of memory */
static int32_t record(fr_t *f, int kind, const uint64_t *kb, size_t kn, vec_t *items,
                      int32_t *key, int *fresh) {
    int unused;
    int32_t k = key_of(f, kind, kb, kn, &unused);
    if (k < 0) return -1;
    int32_t *ix = &VAT(f->key_index, int32_t, k);
    *fresh = *ix < 0;
    if (*fresh) {
        if (vgrow(items, items->n + 1)) return -1;
        memset((char *)items->p + items->n * items->sz, 0, items->sz);
        *ix = (int32_t)items->n++;
    }
    if (key) *key = k;
    return *ix;
}

static int cmp_lfn(const fr_t *f, const lfn_t *a, const lfn_t *b) {
    const intern_t *t = &f->str;
    const uint32_t *ox = &VAT(t->offs, uint32_t, 2 * a->name), *oy = &VAT(t->offs, uint32_t, 2 * b->name);
    size_t n = ox[1] < oy[1] ? ox[1] : oy[1];
    int r = memcmp((char *)t->bytes.p + ox[0], (char *)t->bytes.p + oy[0], n);
    return r ? r : (ox[1] > oy[1]) - (ox[1] < oy[1]);
}

/* the line's functions by name, as Python's sorted() (insertion sort: a few entries) */
static void sort_fns(const fr_t *f, line_t *L) {
    lfn_t *a = L->fns.p;
    for (size_t i = 1; i < L->fns.n; i++) {
        lfn_t x = a[i];
        size_t j = i;
        while (j > 0 && cmp_lfn(f, &a[j - 1], &x) > 0) { a[j] = a[j - 1]; j--; }
        a[j] = x;
    }
}

static int fold_line(fr_t *f, line_t *L, int64_t k, double wall, double mpi, int64_t node,
                     int32_t host, int has_tl, double bin_s, int32_t nb) {
    f->wall[k] = wall;
    f->mpi[k] = mpi;
    f->node[k] = node;
    int32_t *hi = &VAT(f->host_of, int32_t, host);
    if (*hi < 0) {
        *hi = (int32_t)f->hosts.n;
        if (vpush(&f->hosts, &host)) return -1;
    }
    f->host[k] = *hi;
    sort_fns(f, L);
    unsigned __int128 calls = 0, sent = 0, recv = 0, p[4] = {0, 0, 0, 0};
    int32_t top = -1;
    double top_s = 0.0;
    for (size_t i = 0; i < L->fns.n; i++) {
        lfn_t *o = &VAT(L->fns, lfn_t, i);
        col_t *col = &f->cols[o->col];
        col->time[k] = o->time;
        col->calls[k] = o->calls;
        col->present[k] = 1;
        sent += o->sent;
        recv += o->recv;
        if (!col->has_sum) { col->has_sum = 1; col->sum_order = f->nsums++; }
        if (add_u64(&col->s_calls, o->calls) || add_u64(&col->s_sent, o->sent) ||
            add_u64(&col->s_recv, o->recv)) return -2;
        col->s_time += o->time;
        if (o->name != f->outside[0] && o->name != f->outside[1] && o->name != f->outside[2]) {
            calls += o->calls;
            if (top < 0 || o->time > top_s) { top = o->col; top_s = o->time; }
        }
        /* `if a:` in Python: a list of 4 (checked) is true */
        if (o->has_p2p[0]) { p[0] += o->p2p[0]; p[1] += o->p2p[1]; }
        if (o->has_p2p[1]) { p[2] += o->p2p[2]; p[3] += o->p2p[3]; }
    }
    f->calls[k] = clamp(calls);
    f->sent[k] = clamp(sent);
    f->recv[k] = clamp(recv);
    for (int j = 0; j < 4; j++) f->p2p[4 * k + j] = clamp(p[j]);
    f->top[k] = top;
    f->top_s[k] = top_s;

    /* call sites: key (function, (module, offset)...) */
    size_t nmods = L->mods.n;
    for (size_t i = 0; i < L->sites.n; i++) {
        lsite_t *o = &VAT(L->sites, lsite_t, i);
        uint64_t kb[2 + 2 * 64];
        if (o->fr_n > 64) return -2;
        size_t kn = 0;
        kb[kn++] = (uint64_t)o->fn;
        kb[kn++] = (uint64_t)o->fr_n;
        for (int32_t j = 0; j < o->fr_n; j++) {
            uint64_t mi = VAT(L->frames, uint64_t, 2 * (o->fr_off + j));
            uint64_t off = VAT(L->frames, uint64_t, 2 * (o->fr_off + j) + 1);
            if (nmods ? mi > nmods - 1 : mi > 0) return -2; /* the checker's range */
            kb[kn++] = mi < nmods ? (uint64_t)VAT(L->mods, int32_t, mi) : (uint64_t)f->qmark;
            kb[kn++] = off;
        }
        int fresh;
        int32_t key, si = record(f, 0, kb, kn, &f->sites, &key, &fresh);
        if (si < 0) return -1;
        site_t *s = &VAT(f->sites, site_t, si);
        if (fresh) {
            s->key = key;
            s->fn = o->fn;
            s->hist_len = o->has_hist ? NBINS : 0;
            s->rank = VINIT(int64_t);
            s->rcalls = VINIT(uint64_t);
            s->rtime = VINIT(double);
        }
        if (add_u64(&s->calls, o->calls) || add_u64(&s->sent, o->sent) || add_u64(&s->recv, o->recv))
            return -2;
        s->time += o->time;
        if (o->has_hist && s->hist_len)
            for (int j = 0; j < NBINS; j++)
                if (add_u64(&s->hist[j], o->hist[j])) return -2;
        if (s->rank.n && VAT(s->rank, int64_t, s->rank.n - 1) == k) {
            uint64_t *rc = &VAT(s->rcalls, uint64_t, s->rcalls.n - 1);
            *rc = clamp((unsigned __int128)*rc + o->calls);
            VAT(s->rtime, double, s->rtime.n - 1) += o->time;
        } else if (vpush(&s->rank, &k) || vpush(&s->rcalls, &o->calls) || vpush(&s->rtime, &o->time))
            return -1;
    }

    /* communicators: key (kind chain, size, inter, name) as comms.describe reads it;
     * by_id (the last record of each id) as an open-addressed table of the line */
    size_t idcap = 16;
    while (idcap < 2 * L->comms.n) idcap *= 2;
    if (vgrow(&L->idmap, idcap)) return -1;
    int32_t *idmap = L->idmap.p;
    for (size_t j = 0; j < idcap; j++) idmap[j] = -1;
    for (size_t j = 0; j < L->comms.n; j++) {
        int64_t id = VAT(L->comms, lcomm_t, j).id;
        size_t h = (size_t)((uint64_t)id * 0x9E3779B97F4A7C15ull >> 7) & (idcap - 1);
        while (idmap[h] >= 0 && VAT(L->comms, lcomm_t, idmap[h]).id != id) h = (h + 1) & (idcap - 1);
        idmap[h] = (int32_t)j; /* a later record of the same id replaces it */
    }
    for (size_t i = 0; i < L->comms.n; i++) {
        lcomm_t *o = &VAT(L->comms, lcomm_t, i);
        uint64_t kb[8 + 256];
        size_t kn = 0;
        kb[kn++] = (uint64_t)(uint32_t)o->kind;
        if (o->kind == f->other) { /* describe(): one text for all of them */
            kb[kn++] = 0; kb[kn++] = 0; kb[kn++] = 0; kb[kn++] = 0;
            goto keyed;
        }
        kb[kn++] = (uint64_t)(o->size + 1);
        kb[kn++] = (uint64_t)o->inter;
        kb[kn++] = (uint64_t)(o->name + 1);
        kb[kn++] = 0; /* chain length, below */
        /* parents: by_id = the last record of each id; stop at a repeat */
        int64_t seen_ids[256];
        int nseen = 0;
        seen_ids[nseen++] = o->id;
        int has = o->has_parent;
        int64_t pid = o->parent;
        while (has) {
            const lcomm_t *par = NULL;
            size_t h = (size_t)((uint64_t)pid * 0x9E3779B97F4A7C15ull >> 7) & (idcap - 1);
            for (; idmap[h] >= 0; h = (h + 1) & (idcap - 1))
                if (VAT(L->comms, lcomm_t, idmap[h]).id == pid) { par = &VAT(L->comms, lcomm_t, idmap[h]); break; }
            if (!par) break;
            for (int j = 0; j < nseen; j++) if (seen_ids[j] == pid) { par = NULL; break; }
            if (!par) break;
            if (nseen >= 64) return -2; /* a longer chain: the Python reader */
            seen_ids[nseen++] = pid;
            kb[kn++] = (uint64_t)(uint32_t)par->kind;
            has = par->has_parent;
            pid = par->parent;
        }
        kb[4] = kn - 5;
    keyed:;
        int fresh;
        int32_t ci = record(f, 1, kb, kn, &f->comms, NULL, &fresh);
        if (ci < 0) return -1;
        comm_t *cm = &VAT(f->comms, comm_t, ci);
        if (fresh) {
            cm->kind = o->kind;
            cm->name = o->name;
            cm->size = o->size;
            cm->inter = o->inter;
            cm->chain_off = (int32_t)f->chains.n;
            cm->chain_len = (int32_t)(kn - 5);
            for (size_t j = 5; j < kn; j++) {
                int32_t kk = (int32_t)kb[j];
                if (vpush(&f->chains, &kk)) return -1;
            }
        }
        cm->records++;
        if (add_u64(&cm->calls, o->calls) || add_u64(&cm->sent, o->sent) || add_u64(&cm->recv, o->recv))
            return -2;
        cm->time += o->time;
    }

    /* regions: by name; their functions by name (regions.py) */
    for (size_t i = 0; i < L->regions.n; i++) {
        lregion_t *o = &VAT(L->regions, lregion_t, i);
        uint64_t kb[2] = {(uint64_t)o->name, UINT64_MAX};
        int fresh;
        int32_t gi = record(f, 3, kb, 2, &f->regions, NULL, &fresh);
        if (gi < 0) return -1;
        region_t *g = &VAT(f->regions, region_t, gi);
        if (fresh) {
            g->name = o->name;
            g->parent = o->parent;
            g->fns = VINIT(int32_t);
        }
        g->ranks++;
        if (add_u64(&g->entries, o->entries)) return -2;
        g->wall += o->wall;
        for (int32_t j = 0; j < o->fn_n; j++) {
            lrfn_t *r = &VAT(L->rfns, lrfn_t, o->fn_off + j);
            uint64_t kf[3] = {(uint64_t)gi, (uint64_t)r->name, UINT64_MAX - 1};
            int32_t ai = record(f, 4, kf, 3, &f->rfns, NULL, &fresh);
            if (ai < 0) return -1;
            rfn_t *a = &VAT(f->rfns, rfn_t, ai);
            if (fresh) {
                a->name = r->name;
                if (vpush(&g->fns, &ai)) return -1;
            }
            if (add_u64(&a->calls, r->u[0]) || add_u64(&a->sent, r->u[2]) ||
                add_u64(&a->recv, r->u[3])) return -2;
            a->time += r->time;
        }
    }

    /* the time line: staged in its group for the numpy fold (timeline.py) */
    if (has_tl) {
        uint64_t kb[3 + 1024];
        size_t width = L->tl_classes.n;
        if (width > 1024) return -2;
        memcpy(&kb[0], &bin_s, sizeof(double));
        kb[1] = (uint64_t)nb;
        kb[2] = width;
        for (size_t j = 0; j < width; j++) kb[3 + j] = (uint64_t)VAT(L->tl_classes, int32_t, j);
        int fresh;
        int32_t gi = record(f, 2, kb, 3 + width, &f->groups, NULL, &fresh);
        if (gi < 0) return -1;
        tgroup_t *g = &VAT(f->groups, tgroup_t, gi);
        if (fresh) {
            g->bin_s = bin_s;
            g->nb = nb;
            g->width = (int32_t)width;
            g->classes_off = (int32_t)f->tl_classes.n;
            for (size_t j = 0; j < width; j++)
                if (vpush(&f->tl_classes, &VAT(L->tl_classes, int32_t, j))) return -1;
            g->ranks = VINIT(int64_t);
            g->calls = VINIT(uint64_t);
            g->time = VINIT(double);
            g->bytes = VINIT(uint64_t);
        }
        size_t cells = (size_t)nb * width;
        if (vgrow(&g->calls, g->calls.n + cells) || vgrow(&g->time, g->time.n + cells) ||
            vgrow(&g->bytes, g->bytes.n + cells) || vpush(&g->ranks, &k)) return -1;
        memcpy((uint64_t *)g->calls.p + g->calls.n, L->tl_calls.p, cells * 8);
        memcpy((double *)g->time.p + g->time.n, L->tl_time.p, cells * 8);
        memcpy((uint64_t *)g->bytes.p + g->bytes.n, L->tl_bytes.p, cells * 8);
        g->calls.n += cells;
        g->time.n += cells;
        g->bytes.n += cells;
        g->k++;
        f->staged++;
    }
    return 0;
}

/* advise's view of the line just folded (rank k): 0, -1 out of memory */
static int adv_fold_line(fr_t *f, line_t *L, int64_t k) {
    adv_t *a = f->adv;
    vec_t *v = a->v;
    int32_t aff = -1, why = -1;
    uint8_t la = (uint8_t)a->la;
    if (a->has_aff && (aff = intern(&a->strs, a->aff_s, a->aff_n, NULL)) < 0) return -1;
    if (la && (why = intern(&a->strs, a->why_s, a->why_n, NULL)) < 0) return -1;
    if (vpush(&v[A_CPUS], &a->cpus) || vpush(&v[A_AFF], &aff) || vpush(&v[A_LA], &la) ||
        vgrow(&v[A_LA_INT], v[A_LA_INT].n + 4) || vpush(&v[A_LA_GAP], &a->gap) ||
        vpush(&v[A_LA_WHY], &why)) return -1;
    memcpy((int64_t *)v[A_LA_INT].p + v[A_LA_INT].n, a->la_int, sizeof a->la_int);
    v[A_LA_INT].n += 4;
    for (size_t i = 0; i < L->fns.n; i++) {
        const lfn_t *o = &VAT(L->fns, lfn_t, i);
        if (!o->sent && !o->recv) continue;
        if (vpush(&v[A_FB_COL], &o->col) || vpush(&v[A_FB_RANK], &k) ||
            vpush(&v[A_FB_SENT], &o->sent) || vpush(&v[A_FB_RECV], &o->recv)) return -1;
    }
    for (size_t i = 0; i < L->sites.n; i++) {
        const lsite_t *o = &VAT(L->sites, lsite_t, i);
        int32_t j = 0;
        while (j < a->nsite && a->site_sid[j] != o->fn) j++;
        if (j == a->nsite) continue; /* not a collective advise splits by size */
        if (a->site_fi[j] < 0) a->site_fi[j] = a->nfi++;
        int64_t site = (int64_t)v[A_S_RANK].n;
        int32_t hlen = o->has_hist ? NBINS : -1;
        if (vpush(&v[A_S_RANK], &k) || vpush(&v[A_S_FI], &a->site_fi[j]) ||
            vpush(&v[A_S_CALLS], &o->calls) || vpush(&v[A_S_TIME], &o->time) ||
            vpush(&v[A_S_SENT], &o->sent) || vpush(&v[A_S_RECV], &o->recv) ||
            vpush(&v[A_S_HLEN], &hlen)) return -1;
        for (int32_t b = 0; o->has_hist && b < NBINS; b++)
            if (o->hist[b] && (vpush(&v[A_H_SITE], &site) || vpush(&v[A_H_BIN], &b) ||
                               vpush(&v[A_H_COUNT], &o->hist[b]))) return -1;
    }
    return 0;
}

static const char *const DROP_REGION[] = {"labels", "calls", "unmatched"};

/* one rank line [p, e) (without its newline): 0, -1 refused, -3 out of memory */
static int line(fr_t *f, line_t *L, const char *p, const char *e) {
    cur_t cc = {p, e}, *c = &cc;
    uint64_t seen = 0, rank = 0, v;
    double wall = 0, mpi = 0, bin_s = 0;
    int64_t node = -1;
    int32_t host = -1, nb = 0;
    int has_tl = 0, has_sites = 0;
    uint64_t dsite[4] = {0, 0, 0, 0}, dreg[3] = {0, 0, 0};
    double dtime = 0.0;
    int has_dsite = 0;
    uint64_t cdrop = 0;
    int adv = 0;
    L->mods.n = L->sites.n = L->comms.n = L->fns.n = L->regions.n = L->rfns.n = 0;
    if (f->adv) adv_begin(f->adv);
    OBJ_BEGIN(c)
        if (KEY(ks, kn, "rank")) { ONCE(0); if (count(c, UINT64_MAX, &rank)) return -1; }
        else if (KEY(ks, kn, "wall_s")) { ONCE(1); if (timev(c, &wall)) return -1; }
        else if (KEY(ks, kn, "mpi_s")) { ONCE(2); if (timev(c, &mpi)) return -1; }
        else if (KEY(ks, kn, "functions")) { ONCE(3); if (functions(f, c, L)) return -1; }
        else if (KEY(ks, kn, "host")) {
            ONCE(4);
            const char *s; size_t n;
            if (str(c, &s, &n) || (host = sid(f, s, n)) < 0) return -1;
        } else if (KEY(ks, kn, "node")) {
            ONCE(5);
            if (count(c, (uint64_t)(f->nranks - 1), &v)) return -1;
            node = (int64_t)v;
        } else if (KEY(ks, kn, "pid")) { if (count(c, UINT64_MAX, &v)) return -1; }
        else if (KEY(ks, kn, "threads")) { if (count(c, UINT64_MAX, &v)) return -1; }
        else if (KEY(ks, kn, "untracked_requests")) { if (count(c, UINT64_MAX, &v)) return -1; }
        else if (KEY(ks, kn, "peers")) { ONCE(9); if (peers(f, c, f->count)) return -1; }
        else if (KEY(ks, kn, "callsites")) { ONCE(10); has_sites = 1; if (callsites(f, c, L)) return -1; }
        else if (KEY(ks, kn, "callsite_modules")) { ONCE(11); if (strings(f, c, &L->mods)) return -1; }
        else if (KEY(ks, kn, "callsites_dropped")) {
            ONCE(12);
            has_dsite = 1;
            if (counts_obj(c, FOUR, 4, dsite, &dtime)) return -1;
        } else if (KEY(ks, kn, "regions")) {
            ONCE(13);
            if (regions(f, c, L)) return -1;
        } else if (KEY(ks, kn, "regions_dropped")) {
            ONCE(14);
            double unused = 0;
            if (counts_obj(c, DROP_REGION, 3, dreg, &unused)) return -1;
        } else if (KEY(ks, kn, "timeline")) { ONCE(15); if (timeline(f, c, L, &has_tl, &bin_s, &nb)) return -1; }
        else if (KEY(ks, kn, "comms")) { ONCE(16); if (comms(f, c, L)) return -1; }
        else if (KEY(ks, kn, "comms_dropped")) { ONCE(17); if (count(c, UINT64_MAX, &cdrop)) return -1; }
        else if (f->adv && (adv = adv_key(f->adv, c, ks, kn, &seen)) != 0) { if (adv < 0) return -1; }
        else if (skip(c, 1)) return -1;
    OBJ_END(c)
    ws(c);
    if (c->p != e) return -1;
    if ((seen & 0xf) != 0xf || rank != (uint64_t)f->count || f->count >= f->nranks) return -1;
    if (host < 0 && (host = sid(f, "", 0)) < 0) return -3;
    /* the module index range needs callsite_modules, which may come after the sites */
    int rc = fold_line(f, L, f->count, wall, mpi, node, host, has_tl, bin_s, nb);
    if (rc == -1) return -3;
    if (rc) return -1;
    if (f->adv && adv_fold_line(f, L, f->count)) return -3;
    if (has_sites) f->callsites_present = 1;
    if (has_dsite) {
        /* `if d:` in Python: an empty object adds nothing (it adds zeros either way) */
        if (add_u64(&f->d_calls, dsite[0]) || add_u64(&f->d_sent, dsite[2]) ||
            add_u64(&f->d_recv, dsite[3])) return -1;
        f->d_time += dtime;
    }
    if (add_u64(&f->r_labels, dreg[0]) || add_u64(&f->r_calls, dreg[1]) ||
        add_u64(&f->r_unmatched, dreg[2]) || add_u64(&f->comms_dropped, cdrop)) return -1;
    f->count++;
    return 0;
}

/* ---- the interface (fastread.py) ---- */
/* the interface's version: fastread.py loads only a library of its own version */
int ml_fr_version(void) { return 3; }

typedef struct { fr_t f; line_t L; } ml_fr_t;

void ml_fr_free(ml_fr_t *s);

ml_fr_t *ml_fr_new(int64_t nranks) {
    if (nranks < 1 || nranks > 0x7fffffff) return NULL;
    ml_fr_t *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    fr_t *f = &s->f;
    f->nranks = nranks;
    size_t n = (size_t)nranks;
    f->name_ok = VINIT(int8_t);
    f->col_of = VINIT(int32_t);
    f->host_of = VINIT(int32_t);
    f->hosts = VINIT(int32_t);
    f->key_kind = VINIT(int32_t);
    f->key_index = VINIT(int32_t);
    f->src = VINIT(int64_t);
    f->dst = VINIT(int64_t);
    f->msgs = VINIT(uint64_t);
    f->nbytes = VINIT(uint64_t);
    f->sites = VINIT(site_t);
    f->comms = VINIT(comm_t);
    f->chains = VINIT(int32_t);
    f->groups = VINIT(tgroup_t);
    f->tl_classes = VINIT(int32_t);
    f->regions = VINIT(region_t);
    f->rfns = VINIT(rfn_t);
    line_t *L = &s->L;
    L->fns = VINIT(lfn_t);
    L->sites = VINIT(lsite_t);
    L->frames = VINIT(uint64_t);
    L->mods = VINIT(int32_t);
    L->comms = VINIT(lcomm_t);
    L->tl_calls = VINIT(uint64_t);
    L->tl_time = VINIT(double);
    L->tl_bytes = VINIT(uint64_t);
    L->tl_classes = VINIT(int32_t);
    L->regions = VINIT(lregion_t);
    L->rfns = VINIT(lrfn_t);
    L->idmap = VINIT(int32_t);
    f->wall = calloc(n, 8); f->mpi = calloc(n, 8); f->top_s = calloc(n, 8);
    f->node = calloc(n, 8); f->host = calloc(n, 4); f->top = calloc(n, 4);
    f->calls = calloc(n, 8); f->sent = calloc(n, 8); f->recv = calloc(n, 8);
    f->p2p = calloc(4 * n, 8);
    if (intern_init(&f->str) || intern_init(&f->keys) || !f->wall || !f->mpi || !f->top_s ||
        !f->node || !f->host || !f->top || !f->calls || !f->sent || !f->recv || !f->p2p) {
        ml_fr_free(s);
        return NULL;
    }
    static const char *const out[3] = {"MPI_Init", "MPI_Init_thread", "MPI_Finalize"};
    for (int i = 0; i < 3; i++) f->outside[i] = sid(f, out[i], strlen(out[i]));
    f->qmark = sid(f, "?", 1);
    f->other = sid(f, "other", 5);
    if (f->other < 0 || f->outside[0] < 0 || f->outside[1] < 0 || f->outside[2] < 0 || f->qmark < 0) {
        ml_fr_free(s);
        return NULL;
    }
    return s;
}

static void vfree(vec_t *v) { free(v->p); v->p = NULL; v->n = v->cap = 0; }

void ml_fr_free(ml_fr_t *s) {
    if (!s) return;
    fr_t *f = &s->f;
    for (int32_t i = 0; i < f->ncols; i++) {
        free(f->cols[i].time); free(f->cols[i].calls); free(f->cols[i].present);
    }
    for (size_t i = 0; i < f->sites.n; i++) {
        site_t *st = &VAT(f->sites, site_t, i);
        vfree(&st->rank); vfree(&st->rcalls); vfree(&st->rtime);
    }
    for (size_t i = 0; i < f->regions.n; i++) vfree(&VAT(f->regions, region_t, i).fns);
    for (size_t i = 0; i < f->groups.n; i++) {
        tgroup_t *g = &VAT(f->groups, tgroup_t, i);
        vfree(&g->ranks); vfree(&g->calls); vfree(&g->time); vfree(&g->bytes);
    }
    vec_t *vs[] = {&f->name_ok, &f->col_of, &f->host_of, &f->hosts, &f->key_kind, &f->key_index,
                   &f->src, &f->dst, &f->msgs, &f->nbytes, &f->sites, &f->comms, &f->chains,
                   &f->groups, &f->tl_classes, &s->L.fns, &s->L.sites, &s->L.frames, &s->L.mods,
                   &s->L.comms, &f->regions, &f->rfns, &s->L.regions, &s->L.rfns, &s->L.idmap, &s->L.tl_calls, &s->L.tl_time, &s->L.tl_bytes, &s->L.tl_classes};
    for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) vfree(vs[i]);
    intern_free(&f->str);
    intern_free(&f->keys);
    adv_free(f->adv);
    free(f->wall); free(f->mpi); free(f->top_s); free(f->node); free(f->host); free(f->top);
    free(f->calls); free(f->sent); free(f->recv); free(f->p2p);
    free(s);
}

/* a function column for a name of the header (in sorted order, as the Folder does) */
int ml_fr_function(ml_fr_t *s, const char *name, int64_t len) {
    int32_t id = sid(&s->f, name, (size_t)len);
    return id < 0 ? -1 : column(&s->f, id);
}

/* Read the complete lines of buf[0, len): returns the bytes consumed (whole lines);
 * *status: ML_FR_OK (all complete lines read), ML_FR_FLUSH (256 time lines staged:
 * fold them, ml_fr_unstage, call again), ML_FR_REFUSED, ML_FR_NOMEM.  final: buf
 * ends the file (its last line may lack the newline).  Blank lines are skipped. */
int64_t ml_fr_feed(ml_fr_t *s, const char *buf, int64_t len, int final, int *status,
                   int64_t max_line) {
    fr_t *f = &s->f;
    const char *p = buf, *end = buf + len;
    *status = ML_FR_OK;
    while (p < end) {
        if (f->staged >= BATCH) { *status = ML_FR_FLUSH; break; }
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl && !final) break;
        const char *e = nl ? nl : end;
        if (e - p > max_line) { *status = ML_FR_REFUSED; break; }
        const char *q = p;
        while (q < e && (*q == ' ' || *q == '\t' || *q == '\r')) q++;
        if (q < e) {
            int rc = line(f, &s->L, q, e);
            if (rc) { *status = rc == -3 ? ML_FR_NOMEM : ML_FR_REFUSED; break; }
        }
        p = nl ? nl + 1 : end;
    }
    return p - buf;
}

/* ---- results (read by fastread.py; pointers stay valid until the next feed/free) ---- */
int64_t ml_fr_count(ml_fr_t *s) { return s->f.count; }
int32_t ml_fr_staged(ml_fr_t *s) { return s->f.staged; }
int64_t ml_fr_nstrings(ml_fr_t *s) { return (int64_t)s->f.str.n; }
const char *ml_fr_string(ml_fr_t *s, int32_t id, int64_t *len) {
    const uint32_t *o = &VAT(s->f.str.offs, uint32_t, 2 * id);
    *len = o[1];
    return (const char *)s->f.str.bytes.p + o[0];
}

/* per rank: 0 wall, 1 mpi, 2 node, 3 host, 4 calls, 5 sent, 6 recv, 7 p2p (4 per rank),
 * 8 top, 9 top_s; the host list: 10 (string ids) with *n */
void *ml_fr_rank_array(ml_fr_t *s, int which, int64_t *n) {
    fr_t *f = &s->f;
    *n = f->count;
    switch (which) {
    case 0: return f->wall;
    case 1: return f->mpi;
    case 2: return f->node;
    case 3: return f->host;
    case 4: return f->calls;
    case 5: return f->sent;
    case 6: return f->recv;
    case 7: return f->p2p;
    case 8: return f->top;
    case 9: return f->top_s;
    case 10: *n = (int64_t)f->hosts.n; return f->hosts.p;
    default: return NULL;
    }
}

int32_t ml_fr_ncols(ml_fr_t *s) { return s->f.ncols; }
/* column i: name, its arrays, its sums (calls, sent, recv) and time; sum order -1: none */
int32_t ml_fr_col(ml_fr_t *s, int32_t i, double **time, uint64_t **calls, uint8_t **present,
                  uint64_t *sums, double *time_sum, int32_t *sum_order) {
    col_t *c = &s->f.cols[i];
    *time = c->time;
    *calls = c->calls;
    *present = c->present;
    sums[0] = c->s_calls;
    sums[1] = c->s_sent;
    sums[2] = c->s_recv;
    *time_sum = c->s_time;
    *sum_order = c->has_sum ? c->sum_order : -1;
    return c->name;
}

/* the sent peers: 0 src, 1 dst, 2 msgs, 3 bytes */
void *ml_fr_peers(ml_fr_t *s, int which, int64_t *n) {
    fr_t *f = &s->f;
    vec_t *v[4] = {&f->src, &f->dst, &f->msgs, &f->nbytes};
    *n = (int64_t)v[which]->n;
    return v[which]->p;
}

int64_t ml_fr_nsites(ml_fr_t *s, int *present, uint64_t *dropped, double *dropped_time) {
    fr_t *f = &s->f;
    *present = f->callsites_present;
    dropped[0] = f->d_calls;
    dropped[1] = f->d_sent;
    dropped[2] = f->d_recv;
    *dropped_time = f->d_time;
    return (int64_t)f->sites.n;
}
/* site i: function, frames (module string id, offset) in *frames (n pairs), sums,
 * hist (hist_len 0 or 25), per-rank arrays */
int32_t ml_fr_site(ml_fr_t *s, int64_t i, const uint64_t **frames, int64_t *nframes,
                   uint64_t *sums, double *time, int *hist_len, const uint64_t **hist,
                   const int64_t **rank, const uint64_t **rcalls, const double **rtime,
                   int64_t *nrank) {
    site_t *st = &VAT(s->f.sites, site_t, i);
    const uint32_t *o = &VAT(s->f.keys.offs, uint32_t, 2 * st->key);
    const uint64_t *k = (const uint64_t *)((const char *)s->f.keys.bytes.p + o[0]) + 1;
    *nframes = (int64_t)k[1];
    *frames = k + 2;
    sums[0] = st->calls;
    sums[1] = st->sent;
    sums[2] = st->recv;
    *time = st->time;
    *hist_len = st->hist_len;
    *hist = st->hist;
    *rank = st->rank.p;
    *rcalls = st->rcalls.p;
    *rtime = st->rtime.p;
    *nrank = (int64_t)st->rank.n;
    return st->fn;
}

int64_t ml_fr_ncomms(ml_fr_t *s, uint64_t *dropped) {
    dropped[0] = s->f.comms_dropped;
    dropped[1] = s->f.r_labels;
    dropped[2] = s->f.r_calls;
    dropped[3] = s->f.r_unmatched;
    return (int64_t)s->f.comms.n;
}
/* communicator description i: kind, name (-1), size (-1), inter, parent chain kinds, sums */
int32_t ml_fr_comm(ml_fr_t *s, int64_t i, int32_t *name, int64_t *size, int *inter,
                   const int32_t **chain, int32_t *chain_len, uint64_t *sums, double *time) {
    comm_t *c = &VAT(s->f.comms, comm_t, i);
    *name = c->name;
    *size = c->size;
    *inter = c->inter;
    *chain = (const int32_t *)s->f.chains.p + c->chain_off;
    *chain_len = c->chain_len;
    sums[0] = c->records;
    sums[1] = c->calls;
    sums[2] = c->sent;
    sums[3] = c->recv;
    *time = c->time;
    return c->kind;
}

int64_t ml_fr_nregions(ml_fr_t *s) { return (int64_t)s->f.regions.n; }
/* region i: name; parent (-1), ranks, entries, wall; its functions (indices) */
int32_t ml_fr_region(ml_fr_t *s, int64_t i, int32_t *parent, uint64_t *counts, double *wall,
                     const int32_t **fns, int32_t *nfns) {
    region_t *g = &VAT(s->f.regions, region_t, i);
    *parent = g->parent;
    counts[0] = g->ranks;
    counts[1] = g->entries;
    *wall = g->wall;
    *fns = g->fns.p;
    *nfns = (int32_t)g->fns.n;
    return g->name;
}
/* a region's function: name; calls, sent, received; time */
int32_t ml_fr_region_fn(ml_fr_t *s, int32_t i, uint64_t *counts, double *time) {
    rfn_t *a = &VAT(s->f.rfns, rfn_t, i);
    counts[0] = a->calls;
    counts[1] = a->sent;
    counts[2] = a->recv;
    *time = a->time;
    return a->name;
}

int64_t ml_fr_ngroups(ml_fr_t *s) { return (int64_t)s->f.groups.n; }
/* time-line group i: key and its staged lines (k of them) */
int32_t ml_fr_group(ml_fr_t *s, int64_t i, double *bin_s, int32_t *nb, const int32_t **classes,
                    const int64_t **ranks, const uint64_t **calls, const double **time,
                    const uint64_t **bytes) {
    tgroup_t *g = &VAT(s->f.groups, tgroup_t, i);
    *bin_s = g->bin_s;
    *nb = g->nb;
    *classes = (const int32_t *)s->f.tl_classes.p + g->classes_off;
    *ranks = g->ranks.p;
    *calls = g->calls.p;
    *time = g->time.p;
    *bytes = g->bytes.p;
    *classes = (const int32_t *)s->f.tl_classes.p + g->classes_off;
    return g->k; /* width: ml_fr_group_width */
}
int32_t ml_fr_group_width(ml_fr_t *s, int64_t i) { return VAT(s->f.groups, tgroup_t, i).width; }

/* the staged time lines were folded: empty the groups' stages */
void ml_fr_unstage(ml_fr_t *s) {
    fr_t *f = &s->f;
    for (size_t i = 0; i < f->groups.n; i++) {
        tgroup_t *g = &VAT(f->groups, tgroup_t, i);
        g->k = 0;
        g->ranks.n = g->calls.n = g->time.n = g->bytes.n = 0;
    }
    f->staged = 0;
}

/* ---- advise's view: the interface (fastread.py, advise/ranks.py) ---- */
/* fold advise's view in this read: 0, -1 out of memory */
int ml_fr_advise(ml_fr_t *s) {
    if (!s->f.adv) s->f.adv = adv_new();
    return s->f.adv ? 0 : -1;
}
/* a function whose call sites advise's view keeps: 0, -1 (too many, out of memory) */
int ml_fr_advise_site(ml_fr_t *s, const char *name, int64_t len) {
    adv_t *a = s->f.adv;
    int32_t id = sid(&s->f, name, (size_t)len);
    if (!a || id < 0 || a->nsite >= ADV_SITE_FNS) return -1;
    a->site_sid[a->nsite] = id;
    a->site_fi[a->nsite++] = -1;
    return 0;
}
/* array `which` (A_CPUS ...) with *n items (A_LA_INT: 4 per rank) */
void *ml_fr_advise_array(ml_fr_t *s, int which, int64_t *n) {
    *n = 0;
    if (!s->f.adv || which < 0 || which >= ADV_NVEC) return NULL;
    *n = (int64_t)s->f.adv->v[which].n;
    return s->f.adv->v[which].p;
}
/* array `which` copied by the caller: its memory given back at once */
void ml_fr_advise_release(ml_fr_t *s, int which) {
    if (s->f.adv && which >= 0 && which < ADV_NVEC) vfree(&s->f.adv->v[which]);
}
/* the strings of affinity and late_arrival.why: *n of them; string i with *len */
const char *ml_fr_advise_string(ml_fr_t *s, int32_t i, int64_t *len) {
    const intern_t *t = &s->f.adv->strs;
    const uint32_t *o = &VAT(t->offs, uint32_t, 2 * i);
    *len = o[1];
    return (const char *)t->bytes.p + o[0];
}
int64_t ml_fr_advise_nstrings(ml_fr_t *s) { return s->f.adv ? (int64_t)s->f.adv->strs.n : 0; }
/* the call sites' function fi (A_S_FI): its string id (ml_fr_string), -1 none */
int32_t ml_fr_advise_site_name(ml_fr_t *s, int32_t fi) {
    const adv_t *a = s->f.adv;
    for (int32_t j = 0; a && j < a->nsite; j++)
        if (a->site_fi[j] == fi) return a->site_sid[j];
    return -1;
}
