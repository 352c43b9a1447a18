/* Nodes: which world ranks share a node, and the profile's node-level view
 * (docs/profile-format.md, "Nodes").
 *
 * At MPI_Init every rank hashes its host name (the name the profile's "hosts"
 * list shows) and the hashes are gathered: ranks with the same name are one
 * node, nodes numbered in order of their first rank (the order of "hosts").
 * The per-call path then splits every message with a known peer into same-node
 * and other-node (ml_node_add in ml.h), and collectives record the node span
 * of their communicator (ml_coll_span in sem.c, from ml_node_span here).
 *
 * At MPI_Finalize (ml_nodes_reduce, collective) rank 0 gets the node x node
 * matrix of point-to-point messages and bytes sent (from each rank's peers)
 * and the largest node span per collective function; ml_nodes_host_names
 * (collective) gives it the host name of each node's first rank only: nodes x
 * 256 B, not ranks x 256 B.
 *
 * Two modules (module.h, modules_list.h): "hosts" (the layout at MPI_Init, the
 * header's "hosts" and "ranks_per_host") and "nodes" (the header's "nodes", the
 * functions' node fields); the machine facts come between them in the header.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "profile.h"

#define ML_NODE_MATRIX_MAX 256 /* nodes up to which the header holds the node x node matrix */

/* This file's state: the first rank of each node (from MPI_Init), and rank 0's
 * results after ml_nodes_reduce. */
static struct {
    int nnodes;         /* nodes of the job (1 until ml_nodes_init) */
    int *first;         /* [nnodes] the first world rank of each node */
    uint64_t *span_max; /* [ML_NDATA][2] */
    uint64_t *matrix;   /* [nnodes][nnodes][2]: messages, bytes; NULL above ML_NODE_MATRIX_MAX */
    char *names;        /* [nnodes][256]: each node's host name (rank 0, ml_nodes_host_names) */
} N = {.nnodes = 1};

static void *ml_nodes_alloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "mpilens: out of memory for the node table (%zu bytes)\n", n * size);
        abort();
    }
    return p;
}

static uint64_t ml_fnv1a(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static void ml_nodes_init(void)
{
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    uint64_t mine = ml_fnv1a(host);
    uint64_t *all = ml_nodes_alloc((size_t)ml_world_size, sizeof *all);
    PMPI_Allgather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    /* open addressing: hash -> node, nodes numbered by first rank */
    size_t cap = 16;
    while (cap < 2 * (size_t)ml_world_size) cap <<= 1;
    uint64_t *keys = ml_nodes_alloc(cap, sizeof *keys);
    int *vals = ml_nodes_alloc(cap, sizeof *vals);
    char *used = ml_nodes_alloc(cap, 1);
    ml_hot.node_of = ml_nodes_alloc((size_t)ml_world_size, sizeof *ml_hot.node_of);
    int *first = ml_nodes_alloc((size_t)ml_world_size, sizeof *first);
    N.nnodes = 0;
    for (int r = 0; r < ml_world_size; r++) {
        size_t i = (size_t)(all[r] * 0x9E3779B97F4A7C15ull) & (cap - 1);
        while (used[i] && keys[i] != all[r]) i = (i + 1) & (cap - 1);
        if (!used[i]) {
            used[i] = 1;
            keys[i] = all[r];
            first[N.nnodes] = r;
            vals[i] = N.nnodes++;
        }
        ml_hot.node_of[r] = vals[i];
    }
    ml_hot.my_node = ml_hot.node_of[ml_world_rank];
    N.first = realloc(first, (size_t)N.nnodes * sizeof *first);
    if (!N.first) N.first = first;
    free(all); free(keys); free(vals); free(used);
}

int ml_my_node(void)
{
    return ml_hot.node_of ? ml_hot.my_node : -1;
}

/* Collective: on rank 0 the host names of the nodes, 256 bytes each in node order
 * (the name of each node's first rank, host its own name), NULL on the others.  Each
 * node's first rank but rank 0 sends its name to rank 0 over the profiler's private
 * communicator (ml_fin_comm): rank 0 receives nodes - 1 messages and hears from no
 * other rank (an MPI_Gatherv made it receive one, empty, from every rank, which on one
 * host cost it ~60 KB of the MPI's per-peer state per rank, docs/scale.md). */
static char *ml_nodes_host_names(const char *host)
{
    MPI_Comm c = ml_fin_comm();
    if (ml_world_rank != 0) {
        if (N.first[ml_hot.my_node] == ml_world_rank) {
            char name[256] = {0};
            snprintf(name, sizeof name, "%s", host);
            MPI_Request r;
            PMPI_Isend(name, 256, MPI_CHAR, 0, 1, c, &r);
            ml_fin_wait(&r);
        }
        return NULL;
    }
    char *names = ml_nodes_alloc((size_t)N.nnodes, 256);
    snprintf(names, 256, "%s", host);
    enum { BATCH = 256 }; /* receives posted at a time */
    MPI_Request r[BATCH];
    for (int k0 = 1; k0 < N.nnodes; k0 += BATCH) {
        int n = N.nnodes - k0 < BATCH ? N.nnodes - k0 : BATCH;
        for (int i = 0; i < n; i++)
            PMPI_Irecv(names + 256 * (size_t)(k0 + i), 256, MPI_CHAR, N.first[k0 + i], 1, c, &r[i]);
        for (int i = 0; i < n; i++) ml_fin_wait(&r[i]);
    }
    for (int k = 0; k < N.nnodes; k++) names[256 * (size_t)k + 255] = 0;
    return names;
}

/* The header's "hosts" (rank 0; names from ml_nodes_host_names) and "ranks_per_host". */
static void ml_nodes_put_hosts(ml_buf_t *b, const char *names)
{
    int *cnt = ml_nodes_alloc((size_t)N.nnodes, sizeof *cnt);
    for (int r = 0; r < ml_world_size; r++) cnt[ml_hot.node_of[r]]++;
    ml_buf_printf(b, ",\"hosts\":[");
    for (int k = 0; k < N.nnodes; k++) {
        ml_buf_printf(b, k ? "," : "");
        ml_buf_json_str(b, names + 256 * (size_t)k);
    }
    ml_buf_printf(b, "],\"ranks_per_host\":[");
    for (int k = 0; k < N.nnodes; k++) ml_buf_printf(b, "%s%d", k ? "," : "", cnt[k]);
    ml_buf_printf(b, "]");
    free(cnt);
}

/* world NULL: the world ranks 0 .. n-1 (MPI_COMM_WORLD).  Called once per
 * communicator (sem.c's table), never per call. */
void ml_node_span(const int *world, int n, int *nodes, int *rpn)
{
    *nodes = *rpn = 0;
    int *cnt = ml_hot.node_of ? calloc((size_t)N.nnodes, sizeof *cnt) : NULL;
    if (!cnt) return; /* no span recorded for this communicator */
    for (int i = 0; i < n; i++) {
        int w = world ? world[i] : i;
        if (w < 0 || w >= ml_world_size) continue;
        int k = ml_hot.node_of[w];
        if (cnt[k]++ == 0) (*nodes)++;
        if (cnt[k] > *rpn) *rpn = cnt[k];
    }
    free(cnt);
}

static void ml_nodes_reduce(const ml_slot_t *m, const uint64_t *span_max)
{
    /* the spans' maxima came in profile_reduce.c's packed reduction */
    if (ml_world_rank == 0) {
        N.span_max = ml_nodes_alloc((size_t)ML_NDATA * 2, sizeof *N.span_max);
        memcpy(N.span_max, span_max, (size_t)ML_NDATA * 2 * sizeof *N.span_max);
    }
    if (N.nnodes > ML_NODE_MATRIX_MAX) return;
    size_t nm = (size_t)N.nnodes * (size_t)N.nnodes * 2;
    uint64_t *mine = ml_nodes_alloc(nm, sizeof *mine);
    uint64_t *row = mine + (size_t)ml_hot.my_node * (size_t)N.nnodes * 2;
    for (int p = 0; p < ml_world_size; p++) {
        row[2 * ml_hot.node_of[p]] += m->peers[p].msgs_s;
        row[2 * ml_hot.node_of[p] + 1] += m->peers[p].bytes_s;
    }
    N.matrix = ml_world_rank == 0 ? ml_nodes_alloc(nm, sizeof *mine) : NULL;
    ml_reduce_sum_u64(mine, N.matrix, (int)nm);
    free(mine);
}

static void ml_nodes_free(void)
{
    free(N.span_max);
    free(N.matrix);
    N.span_max = N.matrix = NULL;
}

static void ml_put_words(ml_buf_t *b, const uint64_t *w, int n, int stride)
{
    ml_buf_printf(b, "[");
    for (int i = 0; i < n; i++) ml_buf_printf(b, "%s%llu", i ? "," : "", (unsigned long long)w[i * stride]);
    ml_buf_printf(b, "]");
}

/* The header's "nodes" member (rank 0). */
static void ml_nodes_put_header(ml_buf_t *b)
{
    ml_buf_printf(b, ",\"nodes\":{\"count\":%d", N.nnodes);
    if (N.matrix) {
        for (int which = 0; which < 2; which++) {
            ml_buf_printf(b, which ? ",\"matrix_bytes\":[" : ",\"matrix_msgs\":[");
            for (int i = 0; i < N.nnodes; i++) {
                ml_buf_printf(b, i ? "," : "");
                ml_put_words(b, N.matrix + (size_t)i * (size_t)N.nnodes * 2 + which, N.nnodes, 2);
            }
            ml_buf_printf(b, "]");
        }
    }
    ml_buf_printf(b, "}");
}

/* A function's node fields: the intra/inter-node split of its messages with a
 * known peer (xnode: [2][4]) and its communicators' node span (calls: one node,
 * several nodes; max: nodes, ranks per node; max NULL: the header's reduced values
 * of data index di). */
static void ml_nodes_put_function(ml_buf_t *b, const uint64_t *xnode, const uint64_t *calls, const uint64_t *max, int di)
{
    int any = 0;
    for (int i = 0; i < 8; i++) any |= xnode[i] != 0;
    if (any) {
        ml_buf_printf(b, ",\"p2p_intra_node\":");
        ml_put_words(b, xnode, 4, 1);
        ml_buf_printf(b, ",\"p2p_inter_node\":");
        ml_put_words(b, xnode + 4, 4, 1);
    }
    if (!calls[0] && !calls[1]) return;
    if (!max) max = N.span_max ? N.span_max + 2 * di : calls; /* calls: never read past 2 */
    ml_buf_printf(b, ",\"node_span\":{\"one_node\":%llu,\"multi_node\":%llu,\"max_nodes\":%llu,"
                  "\"max_ranks_per_node\":%llu}", (unsigned long long)calls[0], (unsigned long long)calls[1],
                  (unsigned long long)max[0], (unsigned long long)max[1]);
}

/* ---- the modules ---- */

static void ml_hosts_reduce(const ml_profile_t *p)
{
    N.names = ml_nodes_host_names(p->host); /* collective: one 256-byte name per node */
}

static void ml_hosts_header_json(ml_buf_t *b) { ml_nodes_put_hosts(b, N.names); }

static void ml_hosts_release(void)
{
    free(N.names);
    N.names = NULL;
}

/* the node of every rank, at MPI_Init before any call is recorded (engines read it) */
const ml_module_t ml_module_hosts = {
    .name = "hosts",
    .early = ml_nodes_init,
    .reduce = ml_hosts_reduce,
    .header_where_json = ml_hosts_header_json,
    .release = ml_hosts_release,
};

static void ml_nodes_reduce_p(const ml_profile_t *p) { ml_nodes_reduce(p->m, p->span_max); } /* collective */

static void ml_nodes_function_json(ml_buf_t *b, const ml_fdata_t *f)
{
    ml_nodes_put_function(b, f->xnode, f->span_calls, f->span_max, f->di);
}

const ml_module_t ml_module_nodes = {
    .name = "nodes",
    .reduce = ml_nodes_reduce_p,
    .header_where_json = ml_nodes_put_header,
    .function_json = ml_nodes_function_json,
    .release = ml_nodes_free,
};
