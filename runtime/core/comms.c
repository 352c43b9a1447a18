/* Per-communicator records (MPILENS_COMMS): calls, time and bytes per
 * communicator, and how each was made: its size, the function that created
 * it (dup, split, create, cart, ...), its parent, its MPI_Comm_set_name name
 * (docs/runtime.md, "Communicators").
 *
 * The communicators are numbered in order of creation on each rank
 * (MPI_COMM_WORLD 0, MPI_COMM_SELF 1); at most MPILENS_COMMS are kept, the
 * calls on further ones go to one record "other".  A freed communicator's
 * record stays (its handle may be reused by the next one, which gets a new
 * record).  The per-call path finds the record of a handle through a
 * one-entry cache per thread, else one probe of a table that only the
 * creating wrappers write.
 *
 * Each record keeps a copy of the communicator's name: taken when the
 * communicator is made, again after each MPI_Comm_set_name on it (the
 * wrapper, ml_comm_named) and when it is freed.  A partial profile (the
 * flight recorder's dump, on its own thread) prints only these copies: it
 * makes no MPI call.  The profile at MPI_Finalize asks MPI for the names of
 * the communicators still live. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.h"
#include "profile.h"


typedef struct {
    int size, parent, freed, inter;
    char kind[16];
    char name[MPI_MAX_OBJECT_NAME];
} ml_cm_info_t;

/* This file's state: the records and the handle table, written by the
 * wrappers that make, name or free a communicator (under mu); the per-call
 * path reads key and idx without the lock (ml_cm_find). */
static struct {
    ml_cm_info_t *info; /* [ml_hot.cm_max] */
    int n;              /* records in use */
    uint64_t dropped;   /* communicators beyond ml_hot.cm_max */
    uint64_t *key;      /* open addressing: handle bits + 1 (0 empty), per slot of idx */
    int *idx;
    uint32_t mask;
    pthread_mutex_t mu;
} CM = {.mu = PTHREAD_MUTEX_INITIALIZER};
/* Read inline by the per-call path (hooks.h: ml_cm_id). */

static uint64_t ml_cm_hkey(MPI_Comm c)
{
    uint64_t k = 0;
    memcpy(&k, &c, sizeof c < sizeof k ? sizeof c : sizeof k);
    return k + 1;
}

/* Record index of comm (ml_hot.cm_max: "other", -1 unknown); the table's slow path. */
int ml_cm_find(MPI_Comm comm)
{
    uint64_t key = ml_cm_hkey(comm);
    int id = -1;
    for (uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40);; i++) {
        uint64_t k = __atomic_load_n(&CM.key[i & CM.mask], __ATOMIC_ACQUIRE);
        if (!k) break;
        if (k == key) {
            id = CM.idx[i & CM.mask];
            break;
        }
    }
    if (id < 0) id = ml_hot.cm_max; /* made before mpilens saw it, or beyond the limit: "other" */
    ml_thr.cm.comm = comm;
    ml_thr.cm.id = id;
    ml_thr.cm.epoch = ml_hot.cm_epoch;
    return id;
}

static void ml_cm_put(MPI_Comm comm, int id)
{
    uint64_t key = ml_cm_hkey(comm);
    for (uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40);; i++) {
        uint64_t k = CM.key[i & CM.mask];
        if (k && k != key && k != 1) continue;
        CM.idx[i & CM.mask] = id;
        __atomic_store_n(&CM.key[i & CM.mask], key, __ATOMIC_RELEASE);
        return;
    }
}

/* Record index of a live handle in the table, -1 if none (under CM.mu; leaves the cache alone). */
static int ml_cm_live(MPI_Comm comm)
{
    uint64_t key = ml_cm_hkey(comm);
    for (uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40);; i++) {
        uint64_t k = CM.key[i & CM.mask];
        if (!k) return -1;
        if (k == key) return CM.idx[i & CM.mask];
    }
}

/* The name MPI holds for comm into a record's copy (an application thread, under CM.mu). */
static void ml_cm_take_name(ml_cm_info_t *c, MPI_Comm comm)
{
    char name[MPI_MAX_OBJECT_NAME] = {0};
    int len = 0;
    if (PMPI_Comm_get_name(comm, name, &len) != MPI_SUCCESS) name[0] = 0;
    name[sizeof name - 1] = 0;
    memcpy(c->name, name, sizeof name);
}

/* like_parent: the new communicator may not be used yet (MPI_Comm_idup): its size is its parent's */
static void ml_cm_new(MPI_Comm comm, int parent, const char *kind, MPI_Comm like_parent)
{
    if (comm == MPI_COMM_NULL) return;
    pthread_mutex_lock(&CM.mu);
    if (strcmp(kind, "parent") == 0 && ml_cm_live(comm) >= 0) {
        /* MPI_Comm_get_parent returns the same communicator at every call: one record */
        pthread_mutex_unlock(&CM.mu);
        return;
    }
    if (CM.n >= ml_hot.cm_max) {
        CM.dropped++;
    } else {
        ml_cm_info_t *c = &CM.info[CM.n];
        int inter = 0;
        MPI_Comm q = like_parent != MPI_COMM_NULL ? like_parent : comm;
        PMPI_Comm_test_inter(q, &inter);
        c->inter = inter;
        if (inter) PMPI_Comm_remote_size(q, &c->size);
        else PMPI_Comm_size(q, &c->size);
        c->parent = parent;
        snprintf(c->kind, sizeof c->kind, "%s", kind);
        if (like_parent == MPI_COMM_NULL) ml_cm_take_name(c, comm); /* an idup's has none yet */
        ml_cm_put(comm, CM.n++);
    }
    __atomic_add_fetch(&ml_hot.cm_epoch, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&CM.mu);
}

static void ml_cm_init(void)
{
    if (!ml_hot.cm_max || CM.info) return;
    uint32_t sz = 8;
    while (sz < 4u * (uint32_t)ml_hot.cm_max) sz <<= 1;
    CM.info = calloc((size_t)ml_hot.cm_max, sizeof *CM.info);
    CM.key = calloc(sz, sizeof *CM.key);
    CM.idx = calloc(sz, sizeof *CM.idx);
    if (!CM.info || !CM.key || !CM.idx) {
        fprintf(stderr, "mpilens: out of memory allocating the communicator records\n");
        abort();
    }
    CM.mask = sz - 1;
    ml_cm_new(MPI_COMM_WORLD, -1, "world", MPI_COMM_NULL);
    ml_cm_new(MPI_COMM_SELF, -1, "self", MPI_COMM_NULL);
}

/* The wrappers of the functions that make communicators, after a successful call. */
void ml_comm_created(MPI_Comm newcomm, MPI_Comm parent, const char *kind)
{
    if (!CM.info) return;
    int p = parent == MPI_COMM_NULL ? -1 : ml_cm_find(parent);
    ml_cm_new(newcomm, p >= ml_hot.cm_max ? -1 : p, kind, strcmp(kind, "idup") == 0 ? parent : MPI_COMM_NULL);
}

/* MPI_Comm_set_name, after a successful call: the record's copy of the name. */
void ml_comm_named(MPI_Comm comm)
{
    if (!CM.info || comm == MPI_COMM_NULL) return;
    pthread_mutex_lock(&CM.mu);
    int id = ml_cm_live(comm);
    if (id >= 0 && id < ml_hot.cm_max) ml_cm_take_name(&CM.info[id], comm);
    pthread_mutex_unlock(&CM.mu);
}

/* MPI_Comm_free / MPI_Comm_disconnect, before the call: keep the name, free the handle. */
void ml_comm_freeing(MPI_Comm comm)
{
    if (!CM.info || comm == MPI_COMM_NULL) return;
    pthread_mutex_lock(&CM.mu);
    int id = ml_cm_find(comm);
    if (id < ml_hot.cm_max) {
        ml_cm_take_name(&CM.info[id], comm);
        CM.info[id].freed = 1;
        uint64_t key = ml_cm_hkey(comm);
        for (uint32_t i = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 40);; i++) {
            uint64_t k = CM.key[i & CM.mask];
            if (!k) break;
            if (k == key) {
                __atomic_store_n(&CM.key[i & CM.mask], 1, __ATOMIC_RELEASE); /* tombstone */
                break;
            }
        }
    }
    __atomic_add_fetch(&ml_hot.cm_epoch, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&CM.mu);
}

static void ml_cm_attach(ml_slot_t *s)
{
    if (!ml_hot.cm_max) return;
    s->cm = calloc((size_t)ml_hot.cm_max + 1, sizeof(ml_cm_rec_t));
    if (!s->cm) {
        fprintf(stderr, "mpilens: out of memory allocating the communicator records\n");
        abort();
    }
}

static size_t ml_cm_bytes(void) { return ml_hot.cm_max ? ((size_t)ml_hot.cm_max + 1) * sizeof(ml_cm_rec_t) : 0; }

/* This rank's communicators (rank-line members). */
static void ml_cm_rank_json(ml_buf_t *b)
{
    if (!CM.info) return;
    ml_buf_printf(b, ",\"comms\":[");
    int first = 1;
    for (int id = 0; id <= ml_hot.cm_max; id++) {
        ml_timing_t tt = {0};
        uint64_t bs = 0, br = 0;
        ML_FOR_EACH_SLOT(s) {
            if (!s->cm) continue;
            ml_timing_sum(&tt, &s->cm[id].t);
            bs += s->cm[id].bytes_s;
            br += s->cm[id].bytes_r;
        }
        if (id >= CM.n && id < ml_hot.cm_max) continue;
        if (id == ml_hot.cm_max && !tt.calls) continue;
        ml_buf_printf(b, "%s{\"id\":%d", first ? "" : ",", id == ml_hot.cm_max ? -1 : id);
        first = 0;
        if (id < ml_hot.cm_max) {
            const ml_cm_info_t *m = &CM.info[id];
            char name[MPI_MAX_OBJECT_NAME] = {0};
            if (m->freed || ml_in_dump) {
                /* a dump: no MPI call from the recorder's thread, the copy (see above) */
                memcpy(name, m->name, sizeof name);
                name[sizeof name - 1] = 0;
            } else {
                MPI_Comm h = id == 0 ? MPI_COMM_WORLD : id == 1 ? MPI_COMM_SELF : MPI_COMM_NULL;
                for (uint32_t i = 0; h == MPI_COMM_NULL && i <= CM.mask; i++)
                    if (CM.key[i] > 1 && CM.idx[i] == id) {
                        uint64_t k = CM.key[i] - 1;
                        memcpy(&h, &k, sizeof h < sizeof k ? sizeof h : sizeof k);
                    }
                int len = 0;
                if (h != MPI_COMM_NULL) PMPI_Comm_get_name(h, name, &len);
            }
            ml_buf_printf(b, ",\"kind\":\"%s\",\"size\":%d,\"inter\":%s,\"parent\":", m->kind, m->size,
                          m->inter ? "true" : "false");
            if (m->parent >= 0) ml_buf_printf(b, "%d", m->parent);
            else ml_buf_printf(b, "null");
            ml_buf_printf(b, ",\"name\":");
            ml_buf_json_str(b, name);
        } else {
            ml_buf_printf(b, ",\"kind\":\"other\"");
        }
        ml_buf_printf(b, ",\"calls\":%llu,\"time_s\":%.8g,\"bytes_sent\":%llu,\"bytes_recv\":%llu}",
                      (unsigned long long)tt.calls, ml_est_s(&tt),
                      (unsigned long long)bs, (unsigned long long)br);
    }
    ml_buf_printf(b, "],\"comms_dropped\":%llu", (unsigned long long)CM.dropped);
}

/* ---- the module (modules_list.h) ---- */

static const ml_setting ml_cm_settings[] = {
    {.key = "comms", .type = ML_SET_INT, .def = "32", .lo = 0, .hi = 4096, .out = &ml_hot.cm_max,
     .accepted = "an integer from 0 to 4096",
     .help = "communicators each rank keeps a record of (calls, time, bytes; size, how it was made, "
             "its parent, its MPI_Comm_set_name name), MPI_COMM_WORLD and MPI_COMM_SELF included; "
             "calls on further ones go to one record \"other\"; 0: off"},
    {0}};

static int ml_cm_kind_init(void)
{
    ml_cm_init();
    return CM.info ? ML_HOOKS_INLINE : 0;
}

static void ml_cm_header_json(ml_buf_t *b) { ml_buf_printf(b, ",\"comms_max\":%d", ml_hot.cm_max); }

/* Per call: ml_call_done (callend.h) and ml_cm_upd in ml_call_end (callend.c), through the slot's cm. */
const ml_module_t ml_module_comms = {
    .name = "comms",
    .settings = ml_cm_settings,
    .init = ml_cm_kind_init,
    .attach = ml_cm_attach,
    .bytes = ml_cm_bytes,
    .header_json = ml_cm_header_json,
    .rank_json = ml_cm_rank_json,
};
