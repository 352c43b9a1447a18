/* The core's state, below everything that reads it: what the inline per-call
 * code reads (ml_hot, ml_thr: ml.h), the function mask, the world, the
 * settings (config.c reads them into ml_cfg), recording paused (region.c),
 * and the per-thread slots with their iterator.  It calls nothing above it:
 * a new slot's module tables are attached through ml_slot_made (core.c sets
 * it to the registry's ml_modules_attach). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "scratch.h"

ml_core_cfg_t ml_cfg;
int ml_paused = 0;
int ml_ever_paused = 0; /* the flight recorder's collective counts then miss the paused calls */
ML_TLS int ml_in_dump = 0;
void (*ml_slot_made)(ml_slot_t *s);

unsigned char ml_fon[ML_NFUNC];
int ml_world_size = 1, ml_world_rank = 0;
/* this thread's hot state (ml.h: the wrappers reach every field from one thread-pointer offset) */
ML_TLS ml_thr_t ml_thr;
double ml_overhead_ns = 0.0, ml_overhead_sampled_ns = 0.0;
/* what the inline per-call code reads (ml.h); each field is written by the file its comment names */
ml_hot_t ml_hot = {.cs_depth = 1, .cm_max = 32, .cm_epoch = 1};
uint64_t ml_t_init = 0, ml_t_final = 0;
int ml_wrapped_c = ML_NWRAP_C, ml_wrapped_f = ML_NWRAP_F;

/* The slots (one per thread up to MPILENS_MAX_THREADS, then one shared), under mu;
 * shared_mu: the shared slot's lock (ml_shared_lock, below). */
static struct {
    pthread_mutex_t mu, shared_mu;
    ml_slot_t *head;       /* every slot, newest first (merged at MPI_Finalize); the slot iterator */
    ml_slot_t *overflow;   /* the shared slot once MPILENS_MAX_THREADS is reached */
    int n;                 /* slots made */
    uint32_t nshared;      /* threads given the shared slot */
} SL = {.mu = PTHREAD_MUTEX_INITIALIZER, .shared_mu = PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP};

/* The slot iterator (ml.h): a slot is published complete (release), so a
 * walk on another thread (the flight recorder's dump) sees its tables. */
ml_slot_t *ml_first_slot(void) { return __atomic_load_n(&SL.head, __ATOMIC_ACQUIRE); }
int ml_slot_count(void) { return SL.n; }

static ml_slot_t *ml_slot_new(void)
{
    ml_slot_t *s = calloc(1, sizeof *s);
    if (s) s->peers = calloc((size_t)ml_world_size, sizeof(ml_peer_t));
    if (!s || !s->peers) {
        fprintf(stderr, "mpilens: out of memory allocating a thread's records (%zu bytes)\n", sizeof *s);
        abort();
    }
    if (ml_slot_made) ml_slot_made(s); /* the modules' tables (core.c: ml_modules_attach) */
    s->next = SL.head;
    __atomic_store_n(&SL.head, s, __ATOMIC_RELEASE);
    SL.n++;
    return s;
}

ml_slot_t *ml_slot_attach(void)
{
    pthread_mutex_lock(&SL.mu);
    ml_slot_t *s;
    if (SL.n < ml_cfg.max_threads) {
        s = ml_slot_new();
    } else {
        if (!SL.overflow) {
            SL.overflow = ml_slot_new();
            SL.overflow->shared = 1;
        }
        s = SL.overflow;
        ml_thr.rq_thread = (++SL.nshared & 0xffff) ? (SL.nshared & 0xffff) : (++SL.nshared & 0xffff); /* 1..65535 */
    }
    pthread_mutex_unlock(&SL.mu);
    ml_thr.slot = s;
    return s;
}

/* The shared slot's lock: an adaptive mutex (spins briefly, then sleeps).  A
 * pure spin lock made 4 threads on 2 oversubscribed cores 40x slower than
 * without mpilens: a waiter spun out its time slice while the holder was
 * descheduled.  Only threads beyond MPILENS_MAX_THREADS ever take it. */
void ml_shared_lock(void) { pthread_mutex_lock(&SL.shared_mu); }
void ml_shared_unlock(void) { pthread_mutex_unlock(&SL.shared_mu); }

void ml_mark_served(void) { ml_thr.served = 1; }

/* The wrappers' scratch (saved requests, statuses, Fortran handle
 * conversions; which 0..ML_NSCRATCH-1): inside a wrapper there is no way to
 * report an error, so no memory ends the job. */
void *ml_scratch(size_t bytes, int which)
{
    static ML_TLS ml_scratch_t buf[ML_NSCRATCH];
    void *p = ml_scratch_get(&buf[which], bytes);
    if (!p) {
        fprintf(stderr, "mpilens: out of memory (%zu bytes of scratch)\n", bytes);
        abort();
    }
    return p;
}

uint64_t ml_probe_backtraces = 0;

/* A module's out-of-line call hook on or off (hooks.h, module.h). */
void ml_module_call_on(int mod, int on)
{
    if (on) __atomic_fetch_or(&ml_hot.kinds_rare, 1u << mod, __ATOMIC_RELAXED);
    else __atomic_fetch_and(&ml_hot.kinds_rare, ~(1u << mod), __ATOMIC_RELAXED);
}
