/* The learning cache (MPILENS_ALLTOALL_CACHE): Learning that spans runs.
 *
 * Many applications call MPI_Alltoall tens of times per run, not thousands,
 * and run the same job again and again.  The cache keeps, per machine
 * signature, communicator size, ranks per node and power-of-two range of
 * block sizes (the tuning file's key):
 *
 *   - finished choices ("learned"): a later run starts in Running (source
 *     "reused"), as with the tuning file;
 *   - partial learning ("learning"): the candidates left, their samples so
 *     far (calls and agreed time per slot, the first turn's fastest calls),
 *     the dropped candidates' times and the race points passed, resumed by
 *     the next run of any application with the same key;
 *   - the calls per run at the key in the last run: the estimate behind
 *     provisional choices (learn.c, docs/alltoall.md "Choices from few calls").
 *
 * Default file: $XDG_CACHE_HOME/mpilens/tuning-<machine>.json (else
 * ~/.cache/...); a path, or off.  Rank 0 of MPI_COMM_WORLD reads it at
 * MPI_Init and broadcasts it: every rank resumes from the same samples, so
 * decisions stay agreed.  A corrupt or foreign file (another machine
 * signature) gives one warning line and is ignored (replaced at
 * MPI_Finalize).  At MPI_Finalize the communicators still alive agree their
 * samples (learn.c), rank 0 of MPI_COMM_WORLD gathers them, takes an
 * exclusive flock on FILE.lock (a lock on FILE itself would be lost with the
 * rename), reads the file again (other jobs may have written since),
 * merges this run's new samples into it (added, so two jobs finishing
 * together both leave theirs) and writes it atomically (temporary file in
 * the same directory, fsync, rename).  Samples of communicators freed while
 * learning are not kept.
 *
 * Format (docs/alltoall.md, "Learning cache"):
 *   {"format": "mpilens-alltoall-cache", "version": 1, "machine": "...",
 *    "entries": [{"comm_size": 4, "ranks_per_node": 4, "min_bytes": 64,
 *      "max_bytes": 127, "state": "learned" | "learning", "algorithm": name | null,
 *      "time_s": t, "calls_per_run": n, "runs": n, "learning_calls": n,
 *      "race_point": n, "first_candidates": [names], "candidates": [names],
 *      "dropped": {name: time_s}, "samples": {name: {"calls": [NSLOT ints],
 *      "time_s": [NSLOT sums over the ranks], "first_turn_min_s": t | null}}}]}
 *   first_turn_min_s is null for a candidate with no call of its first turn
 *   yet (no minimum); a 0 (what versions before wrote for none), a missing key
 *   or a candidate without calls read as no minimum too.
 */
#define _DEFAULT_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alltoall.h"
#include "json.h"

#define CACHE_MAX 256          /* entries kept */
#define CAP_MAX 16             /* partial learnings kept per process at MPI_Finalize */
#define MAX_FILE (4 << 20)
#define FORMAT "mpilens-alltoall-cache"

typedef struct {
    int P, rpn;
    long long lo, hi;
    int learned, alg;          /* learned: the choice; learning: the provisional one or -1 */
    double time_s;
    long long calls_per_run, learning_calls;
    int runs, rp, ncand, cand[ML_A2A_NALG], first_mask;
    int tn[ML_A2A_NALG][NSLOT];
    double ts[ML_A2A_NALG][NSLOT], tmin[ML_A2A_NALG], mean[ML_A2A_NALG];
    int touched;               /* rank 0, merging: already updated by this run */
} centry;

/* One partial learning of this run (fixed size: gathered as doubles). */
enum { K_P, K_RPN, K_BYTES, K_ALG, K_CALLS, K_LCALLS, K_CARRIED, K_RP, K_MASK, K_NCAND, K_CAND,
       K_A = K_CAND + ML_A2A_NALG };
enum { A_DTN, A_DTS = NSLOT, A_TN = 2 * NSLOT, A_TS = 3 * NSLOT, A_TMIN = 4 * NSLOT, A_MEAN, A_N };
#define K_N (K_A + ML_A2A_NALG * A_N)

struct ml_a2a_cache {
    char path[4096];           /* rank 0 */
    int n;
    centry *e;                 /* n entries, the same on every rank */
    double caps[CAP_MAX][K_N];
    int ncaps;
};

/* ---------------- the file's name ---------------- */

/* "tuning-<machine>.json": the signature's letters, digits, '.', '_' and
 * '-' (others become '-'), at most 80, then a hash of the whole signature. */
static void file_name(char *out, size_t len, const char *machine)
{
    char slug[96];
    size_t n = 0;
    unsigned h = 2166136261u; /* FNV-1a */
    for (const char *s = machine; *s; s++) {
        h = (h ^ (unsigned char)*s) * 16777619u;
        char c = *s;
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '.' || c == '_' || c == '-';
        if (n < 80 && (ok || (n > 0 && slug[n - 1] != '-')))
            slug[n++] = ok ? c : '-';
    }
    while (n > 0 && slug[n - 1] == '-')
        n--;
    slug[n] = 0;
    snprintf(out, len, "tuning-%s-%08x.json", slug, h);
}

/* The cache's path on rank 0: the setting, or the default; 0 ok, -1 no
 * place for it (no HOME). */
static int resolve(char *out, size_t len, const char *setting)
{
    if (setting) {
        snprintf(out, len, "%s", setting);
        return 0;
    }
    char name[160];
    file_name(name, sizeof name, ml_a2a.machine);
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/') /* the XDG rule: a relative value is ignored */
        n = snprintf(out, len, "%s/mpilens/%s", xdg, name);
    else if (home && home[0])
        n = snprintf(out, len, "%s/.cache/mpilens/%s", home, name);
    else
        return -1;
    return n < (int)len ? 0 : -1;
}

/* ---------------- reading ---------------- */

typedef struct {
    struct ml_a2a_cache *c;
    centry *cur;
    int seen;                  /* top level: bits of format, version, machine */
    char format[32], machine[128];
    double version;
    int alg;                   /* samples: the algorithm of the object being read */
} rd_t;

static int bad(ml_json *ps, const char *fmt, const char *what)
{
    snprintf(ps->err, ps->errlen, fmt, what);
    return -1;
}

/* A number that must be an integer in [lo, hi]. */
static int integer(ml_json *ps, const char *key, long long lo, long long hi, long long *v)
{
    double d;
    if (ml_json_number(ps, &d))
        return -1;
    if (!(d >= (double)lo && d <= (double)hi && d == (double)(long long)d))
        return bad(ps, "key '%s' is not an integer in its range", key);
    *v = (long long)d;
    return 0;
}

static int nonneg(ml_json *ps, const char *key, double *v)
{
    if (ml_json_number(ps, v))
        return -1;
    return *v >= 0 && *v < 1e30 ? 0 : bad(ps, "key '%s' is not a non-negative number", key);
}

static int alg_name(ml_json *ps, int *alg)
{
    char name[32];
    if (ps->p >= ps->end || *ps->p != '"')
        return bad(ps, "%s", "an algorithm is not a string");
    if (ml_json_string(ps, name, sizeof name))
        return -1;
    if ((*alg = ml_a2a_find(name)) < 0)
        return bad(ps, "unknown algorithm '%.32s'", name);
    return 0;
}

static int cand_elem(ml_json *ps, int i, void *vctx)
{
    centry *e = ((rd_t *)vctx)->cur;
    int a;
    if (i >= ML_A2A_NALG || alg_name(ps, &a))
        return i >= ML_A2A_NALG ? bad(ps, "%s", "too many candidates") : -1;
    for (int j = 0; j < e->ncand; j++)
        if (e->cand[j] == a)
            return bad(ps, "candidate '%s' listed twice", ml_a2a_names[a]);
    e->cand[e->ncand++] = a;
    return 0;
}

static int first_elem(ml_json *ps, int i, void *vctx)
{
    int a;
    (void)i;
    if (alg_name(ps, &a))
        return -1;
    ((rd_t *)vctx)->cur->first_mask |= 1 << a;
    return 0;
}

static int dropped_member(ml_json *ps, const char *key, void *vctx)
{
    centry *e = ((rd_t *)vctx)->cur;
    int a = ml_a2a_find(key);
    if (a < 0)
        return bad(ps, "unknown algorithm '%.32s'", key);
    return nonneg(ps, "dropped", &e->mean[a]);
}

static int sample_member(ml_json *ps, const char *key, void *vctx)
{
    rd_t *r = vctx;
    centry *e = r->cur;
    int a = r->alg, n = 0;
    if (strcmp(key, "calls") == 0 || strcmp(key, "time_s") == 0) {
        double v[NSLOT];
        if (ps->p >= ps->end || *ps->p != '[' || ml_json_array(ps, 1, v, NSLOT, &n))
            return ps->p < ps->end && *ps->p != '[' ? bad(ps, "key '%s' is not an array", key) : -1;
        if (n != NSLOT)
            return bad(ps, "key '%s' does not have one value per slot (16)", key);
        for (int j = 0; j < NSLOT; j++) {
            if (!(v[j] >= 0 && v[j] < 1e30) || (key[0] == 'c' && v[j] != (double)(int)v[j]))
                return bad(ps, "key '%s' holds a negative or non-integral value", key);
            if (key[0] == 'c')
                e->tn[a][j] = (int)v[j];
            else
                e->ts[a][j] = v[j];
        }
        return 0;
    }
    if (strcmp(key, "first_turn_min_s") == 0) { /* null (or 0, before): no minimum */
        if (ps->end - ps->p >= 4 && memcmp(ps->p, "null", 4) == 0) {
            ps->p += 4;
            e->tmin[a] = -1;
            return 0;
        }
        if (nonneg(ps, key, &e->tmin[a]))
            return -1;
        if (e->tmin[a] == 0)
            e->tmin[a] = -1;
        return 0;
    }
    return ml_json_value(ps, 2);
}

static int samples_member(ml_json *ps, const char *key, void *vctx)
{
    rd_t *r = vctx;
    if ((r->alg = ml_a2a_find(key)) < 0)
        return bad(ps, "unknown algorithm '%.32s'", key);
    if (ps->p >= ps->end || *ps->p != '{')
        return bad(ps, "samples of '%s' are not an object", key);
    return ml_json_object(ps, 2, sample_member, r);
}

enum { E_P = 1, E_RPN = 2, E_LO = 4, E_HI = 8, E_STATE = 16, E_NEED = 31 };

static int entry_member(ml_json *ps, const char *key, void *vctx)
{
    rd_t *r = vctx;
    centry *e = r->cur;
    long long v;
    static const char *const ints[] = {"comm_size", "ranks_per_node", "min_bytes", "max_bytes",
                                       "calls_per_run", "runs", "learning_calls", "race_point"};
    for (int i = 0; i < 8; i++)
        if (strcmp(key, ints[i]) == 0) {
            if (integer(ps, key, i < 2 ? 1 : 0, i == 7 ? ML_A2A_RACE_POINTS : 1LL << 50, &v))
                return -1;
            switch (i) {
            case 0: e->P = (int)v; e->touched |= E_P; break;
            case 1: e->rpn = (int)v; e->touched |= E_RPN; break;
            case 2: e->lo = v; e->touched |= E_LO; break;
            case 3: e->hi = v; e->touched |= E_HI; break;
            case 4: e->calls_per_run = v; break;
            case 5: e->runs = (int)v; break;
            case 6: e->learning_calls = v; break;
            default: e->rp = (int)v;
            }
            return 0;
        }
    if (strcmp(key, "state") == 0) {
        char st[16] = "";
        if (ps->p >= ps->end || *ps->p != '"' || ml_json_string(ps, st, sizeof st))
            return bad(ps, "%s", "key 'state' is not a string");
        if (strcmp(st, "learned") != 0 && strcmp(st, "learning") != 0)
            return bad(ps, "state '%.16s' is not learned or learning", st);
        e->learned = st[6] == 'd';
        e->touched |= E_STATE;
        return 0;
    }
    if (strcmp(key, "algorithm") == 0) {
        if (ps->end - ps->p >= 4 && memcmp(ps->p, "null", 4) == 0) {
            ps->p += 4;
            e->alg = -1;
            return 0;
        }
        return alg_name(ps, &e->alg);
    }
    if (strcmp(key, "time_s") == 0)
        return nonneg(ps, key, &e->time_s);
    if (strcmp(key, "candidates") == 0 || strcmp(key, "first_candidates") == 0)
        return ml_json_each(ps, 2, key[0] == 'c' ? cand_elem : first_elem, r);
    if (strcmp(key, "dropped") == 0 || strcmp(key, "samples") == 0) {
        if (ps->p >= ps->end || *ps->p != '{')
            return bad(ps, "key '%s' is not an object", key);
        return ml_json_object(ps, 2, key[0] == 'd' ? dropped_member : samples_member, r);
    }
    return ml_json_value(ps, 2);
}

static int entry_elem(ml_json *ps, int i, void *vctx)
{
    rd_t *r = vctx;
    (void)i;
    if (ps->p >= ps->end || *ps->p != '{')
        return bad(ps, "%s", "an entry is not an object");
    centry scratch, *e = r->c->n < CACHE_MAX ? &r->c->e[r->c->n] : &scratch; /* beyond: read over */
    memset(e, 0, sizeof *e);
    e->alg = -1;
    e->calls_per_run = -1;
    for (int a = 0; a < ML_A2A_NALG; a++)
        e->tmin[a] = e->mean[a] = -1;
    r->cur = e;
    if (ml_json_object(ps, 1, entry_member, r))
        return -1;
    if ((e->touched & E_NEED) != E_NEED)
        return bad(ps, "%s", "an entry lacks comm_size, ranks_per_node, min_bytes, max_bytes or state");
    if (e->hi < e->lo)
        return bad(ps, "%s", "an entry has max_bytes < min_bytes");
    if (e->learned ? e->alg < 0 : e->ncand < 2)
        return bad(ps, "%s", e->learned ? "a learned entry has no algorithm"
                                        : "a learning entry has fewer than two candidates");
    for (int a = 0; a < ML_A2A_NALG; a++) { /* no call, no minimum (whatever the file says) */
        int calls = 0;
        for (int j = 0; j < NSLOT; j++)
            calls += e->tn[a][j];
        if (calls == 0)
            e->tmin[a] = -1;
    }
    e->touched = 0;
    if (e != &scratch)
        r->c->n++;
    return 0;
}

static int top_member(ml_json *ps, const char *key, void *vctx)
{
    rd_t *r = vctx;
    if (strcmp(key, "format") == 0 || strcmp(key, "machine") == 0) {
        r->seen |= key[0] == 'f' ? 1 : 4;
        if (ps->p >= ps->end || *ps->p != '"')
            return bad(ps, "key '%s' is not a string", key);
        return key[0] == 'f' ? ml_json_string(ps, r->format, sizeof r->format)
                             : ml_json_string(ps, r->machine, sizeof r->machine);
    }
    if (strcmp(key, "version") == 0) {
        r->seen |= 2;
        return ml_json_number(ps, &r->version);
    }
    if (strcmp(key, "entries") == 0)
        return ml_json_each(ps, 1, entry_elem, r);
    return ml_json_value(ps, 1);
}

/* Reads path into c (entries only if it is this machine's).  0 ok, 1 no
 * file, -1 corrupt or foreign (why filled). */
static int load(struct ml_a2a_cache *c, const char *path, char *why, size_t len)
{
    rd_t r = {.c = c};
    c->n = 0;
    int rc = ml_json_parse_file(path, MAX_FILE, top_member, &r, why, len);
    if (rc == -2)
        return 1;
    if (rc == 0 && (r.seen & 7) != 7) {
        snprintf(why, len, "has no key '%s'", !(r.seen & 1) ? "format" : !(r.seen & 2) ? "version"
                                                                                  : "machine");
        rc = -1;
    } else if (rc == 0 && strcmp(r.format, FORMAT) != 0) {
        snprintf(why, len, "has format '%.32s', expected '" FORMAT "'", r.format);
        rc = -1;
    } else if (rc == 0 && r.version != 1) {
        snprintf(why, len, "has version %g, expected 1", r.version);
        rc = -1;
    } else if (rc == 0 && strcmp(r.machine, ml_a2a.machine) != 0) {
        snprintf(why, len, "was written for machine '%.100s', this is '%.100s'", r.machine,
                 ml_a2a.machine);
        rc = -1;
    }
    if (rc)
        c->n = 0;
    return rc;
}

const char *ml_a2a_cache_path(void)
{
    return ml_a2a.cache && ml_a2a.cache->path[0] ? ml_a2a.cache->path : NULL;
}

/* ---------------- MPI_Init ---------------- */

int ml_a2a_cache_init(const char *setting)
{
    int rank, on = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    struct ml_a2a_cache *c = NULL;
    if (rank == 0 && ml_a2a.cfg.mode == ML_A2A_MODE_ADAPTIVE &&
        !(setting && strcmp(setting, "off") == 0)) {
        c = calloc(1, sizeof *c);
        if (c && !(c->e = calloc(CACHE_MAX, sizeof *c->e))) {
            free(c);
            c = NULL;
        }
        if (c && resolve(c->path, sizeof c->path, setting) != 0) {
            fprintf(stderr, "mpilens: the Alltoall learning cache is off: neither XDG_CACHE_HOME "
                            "nor HOME is set (set MPILENS_ALLTOALL_CACHE to a path)\n");
            free(c->e);
            free(c);
            c = NULL;
        }
        char why[512];
        if (c && load(c, c->path, why, sizeof why) < 0)
            fprintf(stderr, "mpilens: the Alltoall learning cache '%s' is ignored: it %s "
                            "(it is replaced at MPI_Finalize)\n", c->path, why);
        on = c != NULL;
    }
    PMPI_Bcast(&on, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!on)
        return 0;
    if (rank != 0 && (!(c = calloc(1, sizeof *c)) || !(c->e = calloc(CACHE_MAX, sizeof *c->e))))
        return 1;
    PMPI_Bcast(&c->n, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (c->n > 0)
        PMPI_Bcast(c->e, (int)(c->n * sizeof *c->e), MPI_BYTE, 0, MPI_COMM_WORLD);
    ml_a2a.cache = c;
    return 0;
}

/* ---------------- Grouping and Learning ---------------- */

static centry *find(int P, int rpn, long long bytes)
{
    struct ml_a2a_cache *c = ml_a2a.cache;
    for (int i = 0; c && i < c->n; i++) {
        centry *e = &c->e[i];
        if (e->P == P && e->rpn == rpn && bytes >= e->lo && bytes <= e->hi)
            return e;
    }
    return NULL;
}

int ml_a2a_cache_choice(int P, int rpn, long long bytes)
{
    const centry *e = find(P, rpn, bytes);
    return e && e->learned ? e->alg : -1;
}

int ml_a2a_cache_resume(comm_state *cs, size_state *e, int *resumed)
{
    const centry *k = find(cs->P, cs->rpn, e->bytes);
    *resumed = 0;
    if (!k || k->learned || cs->P < 2)
        return MPI_SUCCESS;
    int rc = ml_a2a_learn_alloc(cs, e);
    if (rc != MPI_SUCCESS)
        return rc;
    e->ncand = k->ncand;
    e->first_mask = k->first_mask;
    e->rp = k->rp;
    for (int a = 0; a < ML_A2A_NALG; a++)
        e->mean[a] = k->mean[a];
    for (int i = 0; i < k->ncand; i++) {
        int a = e->cand[i] = k->cand[i];
        cand_learn *l = &e->lr[i];
        e->first_mask |= 1 << a;
        e->mean[a] = -1;
        for (int j = 0; j < NSLOT; j++) {
            l->cts[j] = k->ts[a][j];
            l->tn[j] = l->ctn[j] = k->tn[a][j];
            l->done += k->tn[a][j];
        }
        l->done0 = l->done;
        l->ctmin = k->tmin[a] > 0 ? k->tmin[a] : -1;
    }
    e->learn_local = 0;
    e->budget = -1;
    e->carried = k->learning_calls;
    *resumed = 1;
    return MPI_SUCCESS;
}

/* The rule of docs/alltoall.md, "Choices from few calls": with the calls of
 * the last run at this key as the estimate E of this run's, learning that
 * is not expected to end within E calls spends half of them (whole turns, at
 * least one) learning, then makes a provisional choice. */
void ml_a2a_cache_plan(const comm_state *cs, size_state *e)
{
    const centry *k = find(cs->P, cs->rpn, e->bytes);
    e->expect = k ? k->calls_per_run : -1;
    e->budget = -1;
    e->round0 = e->learn_calls;
    if (!ml_a2a.cfg.provisional || e->expect < 0)
        return;
    /* few calls per run: turns of one call, and from the third run on the choice
     * is made at MPI_Finalize (learn.c, "Few calls per run") */
    e->few = e->expect <= ML_A2A_FEW_CALLS;
    e->final_run = e->few && k->runs >= 2;
    long long left = 0, b = ml_a2a_block_of(e);
    for (int i = 0; i < e->ncand; i++)
        if (e->lr[i].done < ml_a2a.cfg.learn_n)
            left += ml_a2a.cfg.learn_n - e->lr[i].done;
    if (left <= e->expect - (e->calls - 1))
        return; /* Learning should end in this run */
    e->budget = e->expect / 2 / b * b;
    if (e->budget < b)
        e->budget = b;
}

void ml_a2a_cache_capture(const comm_state *cs, const size_state *e, const double *S)
{
    struct ml_a2a_cache *c = ml_a2a.cache;
    if (!c || c->ncaps >= CAP_MAX || !e->lr)
        return;
    double *k = c->caps[c->ncaps++];
    memset(k, 0, sizeof(double) * K_N);
    k[K_P] = cs->P;
    k[K_RPN] = cs->rpn;
    k[K_BYTES] = (double)e->bytes;
    k[K_ALG] = e->phase == PH_RUN ? e->alg : -1;
    k[K_CALLS] = (double)e->calls;
    k[K_LCALLS] = (double)(e->learn_calls - e->round0);
    k[K_CARRIED] = (double)e->carried;
    k[K_RP] = e->rp;
    k[K_MASK] = e->first_mask;
    k[K_NCAND] = e->ncand;
    for (int a = 0; a < ML_A2A_NALG; a++) {
        k[K_CAND + a] = -1;
        k[K_A + a * A_N + A_TMIN] = -1;
        k[K_A + a * A_N + A_MEAN] = e->mean[a]; /* the dropped ones' (the others' below) */
    }
    for (int i = 0; i < e->ncand; i++) {
        const cand_learn *l = &e->lr[i];
        double *q = k + K_A + e->cand[i] * A_N;
        k[K_CAND + i] = e->cand[i];
        for (int j = 0; j < NSLOT; j++) {
            q[A_DTN + j] = l->tn[j] - l->ctn[j];
            q[A_DTS + j] = S[i * NSLOT + j];
            q[A_TN + j] = l->tn[j];
            q[A_TS + j] = l->cts[j] + S[i * NSLOT + j];
        }
        q[A_TMIN] = S[e->ncand * NSLOT + i];
        q[A_MEAN] = -1;
    }
}

/* ---------------- MPI_Finalize: merge and write ---------------- */

static centry *find_range(struct ml_a2a_cache *c, int P, int rpn, long long lo, long long hi)
{
    for (int i = 0; i < c->n; i++)
        if (c->e[i].P == P && c->e[i].rpn == rpn && c->e[i].lo == lo && c->e[i].hi == hi)
            return &c->e[i];
    return NULL;
}

static centry *new_entry(struct ml_a2a_cache *c, int P, int rpn, long long lo, long long hi)
{
    if (c->n >= CACHE_MAX)
        return NULL;
    centry *e = &c->e[c->n++];
    memset(e, 0, sizeof *e);
    e->P = P;
    e->rpn = rpn;
    e->lo = lo;
    e->hi = hi;
    e->alg = -1;
    for (int a = 0; a < ML_A2A_NALG; a++)
        e->tmin[a] = e->mean[a] = -1;
    return e;
}

static int in_cand(const centry *e, int a)
{
    for (int i = 0; i < e->ncand; i++)
        if (e->cand[i] == a)
            return 1;
    return 0;
}

/* One partial learning of this run into the file's table: its new samples
 * are added to the entry (or the entry is made from all of its samples);
 * a candidate dropped by either side is dropped; a finished entry stays. */
static void merge_partial(struct ml_a2a_cache *c, const double *k)
{
    long long lo, hi;
    ml_tune_range((size_t)k[K_BYTES], &lo, &hi);
    centry *e = find_range(c, (int)k[K_P], (int)k[K_RPN], lo, hi);
    if (e && e->learned)
        return; /* finished meanwhile (another job) */
    int fresh = !e;
    if (fresh && !(e = new_entry(c, (int)k[K_P], (int)k[K_RPN], lo, hi)))
        return;
    int xc[ML_A2A_NALG], nx = (int)k[K_NCAND], left[ML_A2A_NALG], n = 0;
    for (int i = 0; i < nx; i++)
        xc[i] = (int)k[K_CAND + i];
    for (int a = 0; a < ML_A2A_NALG; a++) {
        const double *q = k + K_A + a * A_N;
        int mine = 0;
        for (int i = 0; i < nx; i++)
            mine |= xc[i] == a;
        if (!mine) {
            if (q[A_MEAN] >= 0 && !in_cand(e, a) && e->mean[a] < 0)
                e->mean[a] = q[A_MEAN]; /* dropped here */
            else if (q[A_MEAN] >= 0 && in_cand(e, a))
                e->mean[a] = q[A_MEAN]; /* dropped here, still learning there: dropped */
            continue;
        }
        int theirs = in_cand(e, a) && !fresh;
        for (int j = 0; j < NSLOT; j++) {
            e->tn[a][j] = theirs ? e->tn[a][j] + (int)q[A_DTN + j] : (int)q[A_TN + j];
            e->ts[a][j] = theirs ? e->ts[a][j] + q[A_DTS + j] : q[A_TS + j];
        }
        if (!theirs) /* the entry takes this run's samples, minimum or none */
            e->tmin[a] = q[A_TMIN] > 0 ? q[A_TMIN] : -1;
        else if (q[A_TMIN] > 0 && (e->tmin[a] <= 0 || q[A_TMIN] < e->tmin[a]))
            e->tmin[a] = q[A_TMIN];
    }
    /* candidates left: the file's order, then this run's new ones; none dropped by either */
    for (int i = 0; i < e->ncand; i++) {
        int a = e->cand[i];
        const double *q = k + K_A + a * A_N;
        int mine = 0;
        for (int j = 0; j < nx; j++)
            mine |= xc[j] == a;
        if ((mine || q[A_MEAN] < 0) && e->mean[a] < 0)
            left[n++] = a;
    }
    for (int j = 0; j < nx; j++) {
        int a = xc[j], have = 0;
        for (int i = 0; i < n; i++)
            have |= left[i] == a;
        if (!have && e->mean[a] < 0)
            left[n++] = a;
    }
    if (n < 2) { /* merges left fewer than two: start over (rare) */
        e->ncand = 0;
        c->n--;
        *e = c->e[c->n];
        return;
    }
    memcpy(e->cand, left, sizeof(int) * (size_t)n);
    e->ncand = n;
    e->first_mask |= (int)k[K_MASK];
    if ((int)k[K_RP] > e->rp)
        e->rp = (int)k[K_RP];
    e->alg = (int)k[K_ALG];
    e->learning_calls = (fresh ? (long long)k[K_CARRIED] : e->learning_calls) + (long long)k[K_LCALLS];
    long long calls = (long long)k[K_CALLS];
    e->calls_per_run = e->touched && e->calls_per_run > calls ? e->calls_per_run : calls;
    e->runs += !e->touched;
    e->touched = 1;
}

/* A choice learned in this run (a record of records.c). */
static void merge_learned(struct ml_a2a_cache *c, const double *r)
{
    long long lo, hi;
    ml_tune_range((size_t)r[R_BYTES], &lo, &hi);
    centry *e = find_range(c, (int)r[R_P], (int)r[R_RPN], lo, hi);
    long long before = e && !e->learned ? e->learning_calls : (long long)r[R_CARRIED];
    int runs = e ? e->runs + !e->touched : 1;
    if (!e && !(e = new_entry(c, (int)r[R_P], (int)r[R_RPN], lo, hi)))
        return;
    if (e->learned && e->touched)
        return; /* another communicator of this run learned the range first */
    long long mine = (long long)r[R_LCALLS];
    int P = e->P, rpn = e->rpn;
    memset(e, 0, sizeof *e);
    *e = (centry){.P = P, .rpn = rpn, .lo = lo, .hi = hi, .learned = 1, .alg = (int)r[R_ALG],
                  .time_s = r[R_REF], .calls_per_run = (long long)r[R_CALLS],
                  .learning_calls = before + mine, .runs = runs, .touched = 1};
}

static void names(ml_buf_t *b, const int *cand, int n, int mask)
{
    ml_buf_printf(b, "[");
    for (int i = 0, k = 0; i < ML_A2A_NALG; i++) {
        int a = cand ? (i < n ? cand[i] : -1) : ((mask >> i) & 1 ? i : -1);
        if (a >= 0)
            ml_buf_printf(b, "%s\"%s\"", k++ ? ", " : "", ml_a2a_names[a]);
    }
    ml_buf_printf(b, "]");
}

static void render(ml_buf_t *b, const struct ml_a2a_cache *c)
{
    ml_buf_printf(b, "{\"format\": \"" FORMAT "\", \"version\": 1, \"machine\": ");
    ml_buf_json_str(b, ml_a2a.machine);
    ml_buf_printf(b, ",\n \"entries\": [");
    for (int i = 0; i < c->n; i++) {
        const centry *e = &c->e[i];
        ml_buf_printf(b, "%s\n  {\"comm_size\": %d, \"ranks_per_node\": %d, \"min_bytes\": %lld, "
                      "\"max_bytes\": %lld, \"state\": \"%s\", \"algorithm\": ", i ? "," : "",
                      e->P, e->rpn, e->lo, e->hi, e->learned ? "learned" : "learning");
        if (e->alg >= 0)
            ml_buf_printf(b, "\"%s\"", ml_a2a_names[e->alg]);
        else
            ml_buf_printf(b, "null");
        ml_buf_printf(b, ", \"time_s\": %.9g, \"calls_per_run\": %lld, \"runs\": %d, "
                      "\"learning_calls\": %lld", e->time_s, e->calls_per_run, e->runs,
                      e->learning_calls);
        if (e->learned) {
            ml_buf_printf(b, "}");
            continue;
        }
        ml_buf_printf(b, ", \"race_point\": %d,\n   \"first_candidates\": ", e->rp);
        names(b, NULL, 0, e->first_mask);
        ml_buf_printf(b, ", \"candidates\": ");
        names(b, e->cand, e->ncand, 0);
        ml_buf_printf(b, ", \"dropped\": {");
        for (int a = 0, k = 0; a < ML_A2A_NALG; a++)
            if (e->mean[a] >= 0 && !in_cand(e, a))
                ml_buf_printf(b, "%s\"%s\": %.9g", k++ ? ", " : "", ml_a2a_names[a], e->mean[a]);
        ml_buf_printf(b, "},\n   \"samples\": {");
        for (int i2 = 0; i2 < e->ncand; i2++) {
            int a = e->cand[i2];
            ml_buf_printf(b, "%s\n    \"%s\": {\"calls\": [", i2 ? "," : "", ml_a2a_names[a]);
            for (int j = 0; j < NSLOT; j++)
                ml_buf_printf(b, "%s%d", j ? ", " : "", e->tn[a][j]);
            ml_buf_printf(b, "], \"time_s\": [");
            for (int j = 0; j < NSLOT; j++)
                ml_buf_printf(b, "%s%.17g", j ? ", " : "", e->ts[a][j]);
            if (e->tmin[a] > 0)
                ml_buf_printf(b, "], \"first_turn_min_s\": %.17g}", e->tmin[a]);
            else /* no call of its first turn yet: no minimum (never 0, a time) */
                ml_buf_printf(b, "], \"first_turn_min_s\": null}");
        }
        ml_buf_printf(b, "}}");
    }
    ml_buf_printf(b, "\n]}\n");
}

/* mkdir -p of path's directory; 0 ok */
static int make_dirs(const char *path)
{
    char d[4096];
    snprintf(d, sizeof d, "%s", path);
    char *slash = strrchr(d, '/');
    if (!slash || slash == d)
        return 0;
    *slash = 0;
    for (char *p = d + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(d, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    return mkdir(d, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

/* Rank 0: under the lock, the file as it is now plus this run's learning. */
static void save(struct ml_a2a_cache *c, const double *caps, int ncaps)
{
    int learned = 0;
    for (int i = 0; i < ml_a2a.n_all_recs; i++) {
        const double *r = ml_a2a.all_recs + (size_t)i * R_NFIELD;
        learned += r[R_SRC] == SRC_LEARNED && r[R_ALG] >= 0 && r[R_REF] >= 0;
    }
    if (!learned && ncaps == 0)
        return; /* nothing new: the file is left as it is */
    char lockpath[4200], why[512];
    snprintf(lockpath, sizeof lockpath, "%s.lock", c->path);
    int fd = -1;
    const char *what = make_dirs(c->path) ? "cannot create its directory" : NULL;
    if (!what && (fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644)) < 0)
        what = "cannot create its lock file";
    if (!what && flock(fd, LOCK_EX) != 0)
        what = "cannot lock it";
    if (!what) {
        load(c, c->path, why, sizeof why); /* corrupt or foreign: replaced (warned at MPI_Init) */
        for (int i = 0; i < ncaps; i++)
            merge_partial(c, caps + (size_t)i * K_N);
        for (int i = 0; i < ml_a2a.n_all_recs; i++) {
            const double *r = ml_a2a.all_recs + (size_t)i * R_NFIELD;
            if (r[R_SRC] == SRC_LEARNED && r[R_ALG] >= 0 && r[R_REF] >= 0)
                merge_learned(c, r);
        }
        ml_buf_t b = {0};
        render(&b, c);
        if (ml_a2a_write_atomic(c->path, b.p, b.n) != 0)
            what = "cannot write it";
        ml_buf_free(&b);
    }
    if (fd >= 0)
        close(fd); /* releases the lock */
    if (what)
        fprintf(stderr, "mpilens: the Alltoall learning cache '%s' was not updated: %s (%s)\n",
                c->path, what, strerror(errno));
}

void ml_a2a_cache_finalize(void)
{
    struct ml_a2a_cache *c = ml_a2a.cache;
    if (!c)
        return;
    int rank, P, mine = c->ncaps * K_N, total = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &P);
    int *counts = rank == 0 ? calloc((size_t)P, sizeof *counts) : NULL;
    int *displs = rank == 0 ? calloc((size_t)P, sizeof *displs) : NULL;
    PMPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    double *all = NULL;
    if (rank == 0) {
        for (int i = 0; counts && displs && i < P; i++) {
            displs[i] = total;
            total += counts[i];
        }
        all = malloc(sizeof(double) * (size_t)(total ? total : 1));
    }
    PMPI_Gatherv(&c->caps[0][0], mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0,
                 MPI_COMM_WORLD);
    if (rank == 0 && all)
        save(c, all, total / K_N);
    free(all);
    free(counts);
    free(displs);
    free(c->e);
    free(c);
    ml_a2a.cache = NULL;
}
