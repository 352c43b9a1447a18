/* The profile file (docs/profile-format.md, fields in schema/profile.json),
 * written collectively at MPI_Finalize in four steps:
 *
 *   reduce      profile_reduce.c   merge this rank's thread records; reduce the
 *                                  cross-rank aggregates to rank 0 (fixed-size arrays)
 *   format      profile_format.c   rank 0 the header line (with every engine's
 *                                  section), each rank its own line
 *   write       profile_write.c    offsets by an exclusive scan (ml_fin_exscan), pwrite or MPI-IO
 *                                  under a temporary name (or $TMPDIR if refused)
 *   claim name  profile_write.c    rank 0 links the file to its final name,
 *                                  never overwriting one (name, name.1, ...)
 */
#ifndef MLENS_PROFILE_H
#define MLENS_PROFILE_H
#include "ml.h"

/* Data words per function with data: sums over ranks. */
enum { ML_DW_BYTES_S, ML_DW_BYTES_R, ML_DW_SERVED, ML_DW_HIST_S,
       ML_DW_HIST_R = ML_DW_HIST_S + ML_NBINS, ML_DW_HIST_BYTES_S = ML_DW_HIST_R + ML_NBINS,
       ML_DW_XNODE, ML_DW_SPAN = ML_DW_XNODE + 8, /* nodes.c: intra/inter-node split, span calls */
       ML_DWORDS = ML_DW_SPAN + 2 };

struct ml_profile {
    ml_slot_t *m;                /* this rank's records, merged over its threads */
    double wall, mpi;            /* this rank: MPI_Init to MPI_Finalize, time inside MPI */
    char host[256];              /* this rank's host */
    /* ---- over all ranks: valid on rank 0 ---- */
    uint64_t *calls;             /* [ML_NFUNC] sums, then [ML_NDATA][ML_DWORDS] data words */
    uint64_t *calls_min, *calls_max;          /* [ML_NFUNC] per-rank calls */
    double *time;                /* [ML_NFUNC] sums of per-rank totals, then wall, mpi */
    double *call_max;            /* [ML_NFUNC] longest single call */
    double *call_min;            /* [ML_NFUNC] shortest single call, then wall, mpi minima */
    double *rank_time_min;       /* [ML_NFUNC] per-rank total, least rank (0 if a rank never called) */
    struct { double v; int r; } *rank_time_max; /* [ML_NFUNC] per-rank total, largest and its rank */
    double wall_max, mpi_max, overhead_max;
    double fin_reduce_s;  /* the profiler's end-of-run collectives (this rank's clock) */
    double fin_offsets_s; /* the exclusive scan of the line lengths */
    double fin_total_s;   /* from the end of MPI_Finalize's barrier to the header's format */
    const uint64_t *span_max;    /* [ML_NDATA][2] the collectives' largest node span, reduced
                                  * (rank 0; during the modules' reduce only: nodes.c) */
};

/* MPI_Reduce of uint64 sums to rank 0 with a non-commutative user operation (never
 * MPICH 4.0.2's faulty SMP-aware path, issue 6893; fin.c) */
void ml_reduce_sum_u64(const uint64_t *in, uint64_t *out, int n);

void ml_profile_reduce(ml_profile_t *p);              /* collective */
/* profile_gzip.c: whether the profile at path is compressed (MPILENS_COMPRESS), and
 * b's text from byte `from` on made one gzip member (0 ok) */
int ml_profile_compressed(const char *path);
double ml_now_s(void); /* CLOCK_MONOTONIC, seconds */
/* waits for a request of the profiler's end-of-run collectives, sleeping between
 * tests (fin.c) */
void ml_fin_wait(MPI_Request *r);
/* The finalize steps (fin.c): ml_fin_start at MPI_Finalize's start, ml_fin_mark
 * at the end of each step (rank 0 keeps the time, and its memory with MPILENS_FIN_TRACE);
 * ml_fin_since(step): rank 0's seconds since that mark; ml_fin_trace prints them (rank 0,
 * MPILENS_FIN_TRACE set). */
void ml_fin_start(void);
void ml_fin_mark(const char *step);
double ml_fin_since(const char *step);
void ml_fin_trace(void);
/* collective: MPI_COMM_WORLD's duplicate for the profiler's point-to-point steps
 * (made at the first call, freed by ml_fin_comm_free) */
MPI_Comm ml_fin_comm(void);
void ml_fin_comm_free(void);
/* collective: the exclusive prefix sum of v by recursive doubling (ceil(log2 P) steps),
 * and on rank 0 the sum over all ranks in *total (if total is not NULL) */
void ml_fin_exscan(long long v, long long *excl, long long *total);
int ml_gzip_tail(ml_buf_t *b, size_t from);
/* collective, in blocks of `group` consecutive ranks: the block's lines in one gzip
 * member at its first rank, the others' text sent there and emptied (profile_gzip.c);
 * 0 ok, -1 on a leader whose zlib failed */
int ml_gzip_block(ml_buf_t *b, int group);
void ml_profile_free(ml_profile_t *p);
/* rank 0: the header line; job and created stamp from the naming step */
void ml_profile_header(ml_buf_t *b, const ml_profile_t *p, const char *job, const char *iso);
void ml_profile_rank_line(ml_buf_t *b, const ml_profile_t *p);
/* this rank's thread records summed into m (cleared first; m->peers holds world size entries) */
void ml_merge_into(ml_slot_t *m);
double ml_mpi_time(const ml_slot_t *m); /* time inside MPI without MPI_Init* and MPI_Finalize */
void ml_job_id(char *out, size_t n, const char *stamp);
void ml_output_path(char *out, size_t n, char *job, size_t jn);
/* MPILENS_OUTPUT's template (tmpl) with its placeholders replaced (output.c) */
void ml_expand(char *out, size_t n, const char *tmpl, const char *job, const char *stamp, const char *host);
/* Rank 0: tells `mpilens run` what it wrote, in the file MPILENS_REPORT_TO names (if set):
 * key "profile" (value: the profile's path), "none" (value: why none), "partial" (the
 * partial directory, value "<dir>\t<job id>").  The file is rewritten whole each time. */
void ml_report_to(const char *key, const char *value);

#endif
