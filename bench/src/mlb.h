/* mpilens-bench: shared declarations (options, JSON writer, statistics,
 * environment block, progress, synchronised start).  One file per family:
 * p2p.c coll.c halo.c logp.c io.c memory.c overhead.c. */
#ifndef MLB_H
#define MLB_H
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

/* ---- opts.c: `--name value` options, validated; bad input -> one line, exit 2 ---- */
void ml_opts_init(int argc, char **argv, int first);
int ml_opt_given(const char *name);
long long ml_opt_size(const char *name, long long def);       /* 4096, 4K, 4KiB, 1M */
long long ml_opt_int(const char *name, long long def, long long lo, long long hi);
const char *ml_opt_str(const char *name, const char *def);
int ml_opt_flag(const char *name);
/* comma list of names, each checked against allowed[]; returns a bit mask */
unsigned ml_opt_names(const char *name, const char *const *allowed, int n, unsigned def);
/* sizes from --min-size/--max-size: 0 (if min is 0) then powers of two. */
int ml_opt_sizes(long long defmin, long long defmax, long long lo, long long hi,
                 long long **out);
void ml_opts_finish(void);                  /* rejects options nobody asked for */
_Noreturn void ml_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void ml_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- json.c: streaming JSON writer into a growable buffer ---- */
typedef struct ml_json ml_json;
ml_json *ml_json_new(void);
void ml_json_obj(ml_json *w, const char *key);   /* key NULL inside arrays */
void ml_json_arr(ml_json *w, const char *key);
void ml_json_end(ml_json *w);                    /* closes the innermost object/array */
void ml_json_num(ml_json *w, const char *key, double v);   /* NaN/inf -> null */
void ml_json_int(ml_json *w, const char *key, long long v);
void ml_json_str(ml_json *w, const char *key, const char *s);
void ml_json_bool(ml_json *w, const char *key, int v);
void ml_json_null(ml_json *w, const char *key);
void ml_json_raw(ml_json *w, const char *key, const char *json);
const char *ml_json_text(ml_json *w);
void ml_json_free(ml_json *w);

/* ---- stats.c ---- */
typedef struct {
    int n;
    double median, p2_5, p97_5, ci_lo, ci_hi, min, max, mean, stddev;
    double fence_lo, fence_hi;      /* Tukey far-out fences Q1-3IQR, Q3+3IQR */
    int n_outliers;
} ml_stats;
void ml_stats_compute(const double *x, int n, ml_stats *s);
/* writes {"n","median","p2_5","p97_5","median_ci95":[lo,hi],"min","max","mean",
 * "stddev","outliers":k,"outlier_samples":[...]}; values multiplied by scale */
void ml_json_stats(ml_json *w, const char *key, const double *x, int n, double scale);
double ml_median(const double *x, int n);

/* ---- env.c ---- */
extern int ml_rank, ml_size;
double ml_clock_resolution(void);               /* smallest non-zero MPI_Wtime step */
long ml_rss_kib(const char *field);             /* "VmRSS:" / "VmHWM:" from /proc/self/status */
/* writes "env" and "clock" blocks (collective: call on every rank; w NULL except rank 0) */
void ml_json_env(ml_json *w, int argc, char **argv);
void ml_progress(long done, long total);        /* rank 0, if --progress */
/* inserts JSON text built on rank src under key in rank 0's document */
void ml_json_ship(ml_json *w, const char *key, ml_json *sub, int src);
/* --pairs intra,inter (p2p, logp): rank 0's partner within its node (the first rank on
 * rank 0's host) and across nodes (the first rank on another host), by
 * MPI_Get_processor_name; a class that cannot be formed stops with one line. */
enum { ML_PAIR_INTRA, ML_PAIR_INTER, ML_NPAIR };
extern const char *const ml_pair_names[ML_NPAIR];
void ml_pair_partners(unsigned classes, int partner[ML_NPAIR]);
/* options "ranks": [a, b] and, with --pairs, "pairs": the classes asked for */
void ml_json_pair_options(ml_json *w, int a, int b, unsigned classes);
extern int ml_progress_on;
/* The expected duration of a family, said before it starts (by the calling rank):
 * "MLB-ESTIMATE <s>" with --progress (mpilens bench shows it from 10 s on), else a
 * plain line from 10 s on; probe: the largest size the estimate's probe sent. */
void ml_announce(const char *family, double expected, long long probe);
/* a range: `low` at the probe's fastest rates, `expected` at its typical ones; said as a
 * range when they differ by more than ML_RANGE_WIDE */
#define ML_RANGE_WIDE 1.5
void ml_announce_range(const char *family, double low, double expected, long long probe);
/* result files (--out, --model): 0 or an errno value.  ml_check_writable runs before
 * the benchmark: the directory exists and a file can be created there, path is not a
 * directory nor a read-only file; it creates nothing that stays and never truncates.
 * ml_write_file_atomic writes text and a newline to ".<name>.tmp-<pid>" in path's
 * directory, fsync, rename over path; on error path is untouched, the temp removed. */
int ml_check_writable(const char *path);
int ml_write_file_atomic(const char *path, const char *text);
/* byte pattern used by every family to validate data */
static inline unsigned char ml_pat(uint64_t off, unsigned seed) {
    uint32_t h = (uint32_t)(off * 2654435761u);
    return (unsigned char)(((h >> 24) + seed) & 0xff);
}
void ml_fill(unsigned char *buf, size_t n, uint64_t off0, unsigned seed);
size_t ml_check(const unsigned char *buf, size_t n, uint64_t off0, unsigned seed); /* #bad bytes */
void *ml_alloc(size_t n);                       /* page-aligned, touched, aborts on failure */

/* ---- sync.c: clock-offset-corrected synchronised start ---- */
typedef struct {
    MPI_Comm comm;
    double offset;     /* add to local MPI_Wtime to get rank 0's clock */
    double delta, delta0; /* lead time of announced start, initial lead time */
    double start_global, start_local;
    long late;         /* samples where some rank arrived after the start */
} ml_sync;
void ml_sync_init(ml_sync *s, MPI_Comm comm);    /* estimates offsets (min-RTT ping-pong) */
void ml_sync_wait(ml_sync *s);                   /* returns at the common start */
/* after the timed region: returns 1 (and slowest global finish - start in *tmax) if
 * the sample is valid, 0 if a rank was late (lead time doubled; repeat the sample) */
int ml_sync_done(ml_sync *s, double local_end, double *tmax);

/* ---- families ---- */
typedef int (*ml_family_fn)(ml_json *w, int argc, char **argv);
int ml_p2p(ml_json *w, int argc, char **argv);
int ml_coll(ml_json *w, int argc, char **argv);
int ml_halo(ml_json *w, int argc, char **argv);
int ml_logp(ml_json *w, int argc, char **argv);
/* logp's network model from its medians med[q * ns + i] (q: rtt, os, or, g) */
ml_json *ml_logp_model(const double *med, const long long *sz, int ns, double res);
ml_json *ml_logp_model_on(const double *med, const long long *sz, int ns, double res,
                          const char *const *hosts, int nhosts);
int ml_io(ml_json *w, int argc, char **argv);
int ml_memory(ml_json *w, int argc, char **argv);
int ml_overhead(ml_json *w, int argc, char **argv);
#endif
