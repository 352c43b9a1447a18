/* The process topologies the application creates (MPI_Cart_create,
 * MPI_Graph_create, MPI_Dist_graph_create(_adjacent)), for the profile header's
 * "topologies" key (docs/profile-format.md): the reports use them to name the
 * traffic pattern (a stencil on the application's own grid).
 *
 * The generated wrappers of those four functions call ml_topo_created() on
 * the new communicator after a successful call (every member of it, at the
 * same call).  Topology rank 0 keeps the record: kind, dimensions and
 * periodicity (Cartesian), out-neighbours (graphs), and the MPI_COMM_WORLD
 * rank of each topology rank.  A Cartesian or MPI-1 graph topology is known
 * to every member, so nothing is communicated; a distributed graph's
 * neighbour lists are gathered to topology rank 0 on the new communicator
 * (which the application cannot have used yet).  Topology creation is rare
 * and collective; it is not the per-call path.
 *
 * At most ML_TOPO_MAX topologies are kept per rank and written per job; the
 * others are counted (topologies_dropped).  A graph with more than
 * ML_TOPO_MAXEDGES edges is kept without its edges (edges: null).
 *
 * The module's reduce (ml_topo_reduce) is collective over MPI_COMM_WORLD (the
 * profile's reduction, on every rank); rank 0 keeps the header text. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topo.h"
#include "profile.h"
#include "ml.h"

#define ML_TOPO_MAX 16
#define ML_TOPO_MAXEDGES (1 << 16)

enum { ML_TOPO_CART, ML_TOPO_GRAPH, ML_TOPO_DIST };
static const char *const ml_topo_kind[] = {"cart", "graph", "dist_graph"};

typedef struct {
    int kind, n, ndims, nedges;
    int *dims, *periods; /* ndims each (Cartesian) */
    int *world;          /* n: MPI_COMM_WORLD rank of each topology rank */
    int *index;          /* n + 1 offsets into edges (graphs); NULL: not kept */
    int *edges;          /* out-neighbours, as topology ranks */
} ml_topo_t;

/* This file's state: the topologies kept (under mu), and how many were not. */
static struct {
    ml_topo_t topos[ML_TOPO_MAX];
    int ntopo;
    unsigned long long dropped;
    pthread_mutex_t mu;
} TP = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int *ml_topo_ints(int n)
{
    int *p = calloc((size_t)(n > 0 ? n : 1), sizeof(int));
    if (!p) {
        fprintf(stderr, "mpilens: out of memory recording a process topology\n");
        abort();
    }
    return p;
}

/* MPI_COMM_WORLD rank of each rank of comm */
static int *ml_topo_world(MPI_Comm comm, int n)
{
    MPI_Group g, w;
    PMPI_Comm_group(comm, &g);
    PMPI_Comm_group(MPI_COMM_WORLD, &w);
    int *in = ml_topo_ints(n), *out = ml_topo_ints(n);
    for (int i = 0; i < n; i++) in[i] = i;
    PMPI_Group_translate_ranks(g, n, in, w, out);
    PMPI_Group_free(&g);
    PMPI_Group_free(&w);
    free(in);
    return out;
}

/* Out-neighbours of a distributed graph, gathered to topology rank 0 (collective on comm). */
static void ml_topo_dist_edges(MPI_Comm comm, int rank, int n, ml_topo_t *t)
{
    int indeg = 0, outdeg = 0, weighted = 0;
    PMPI_Dist_graph_neighbors_count(comm, &indeg, &outdeg, &weighted);
    long long mine = outdeg, total = 0;
    PMPI_Allreduce(&mine, &total, 1, MPI_LONG_LONG, MPI_SUM, comm);
    t->nedges = total > ML_TOPO_MAXEDGES ? -1 : (int)total;
    if (t->nedges < 0) return; /* too many: the record keeps no edges */
    int *src = ml_topo_ints(indeg), *srcw = ml_topo_ints(indeg);
    int *dst = ml_topo_ints(outdeg), *dstw = ml_topo_ints(outdeg);
    PMPI_Dist_graph_neighbors(comm, indeg, src, srcw, outdeg, dst, dstw);
    int *deg = rank == 0 ? ml_topo_ints(n) : NULL;
    PMPI_Gather(&outdeg, 1, MPI_INT, deg, 1, MPI_INT, 0, comm);
    if (rank == 0) {
        t->index = ml_topo_ints(n + 1);
        for (int i = 0; i < n; i++) t->index[i + 1] = t->index[i] + deg[i];
        t->edges = ml_topo_ints(t->nedges);
    }
    PMPI_Gatherv(dst, outdeg, MPI_INT, t->edges, deg, t->index, MPI_INT, 0, comm);
    free(src);
    free(srcw);
    free(dst);
    free(dstw);
    free(deg);
}

void ml_topo_created(MPI_Comm comm)
{
    if (comm == MPI_COMM_NULL) return; /* not a member (a grid smaller than comm_old) */
    ml_thr.depth++;                        /* our MPI calls are not the application's */
    int status = MPI_UNDEFINED, rank = 0, n = 0;
    PMPI_Topo_test(comm, &status);
    PMPI_Comm_rank(comm, &rank);
    PMPI_Comm_size(comm, &n);
    ml_topo_t t;
    memset(&t, 0, sizeof t);
    t.n = n;
    if (status == MPI_DIST_GRAPH) {
        t.kind = ML_TOPO_DIST;
        ml_topo_dist_edges(comm, rank, n, &t); /* collective: every member */
    } else if (status == MPI_CART && rank == 0) {
        t.kind = ML_TOPO_CART;
        PMPI_Cartdim_get(comm, &t.ndims);
        t.dims = ml_topo_ints(t.ndims);
        t.periods = ml_topo_ints(t.ndims);
        int *coords = ml_topo_ints(t.ndims);
        PMPI_Cart_get(comm, t.ndims, t.dims, t.periods, coords);
        free(coords);
    } else if (status == MPI_GRAPH && rank == 0) {
        t.kind = ML_TOPO_GRAPH;
        int nnodes = 0, nedges = 0;
        PMPI_Graphdims_get(comm, &nnodes, &nedges);
        t.nedges = nedges > ML_TOPO_MAXEDGES ? -1 : nedges;
        if (t.nedges >= 0 && nnodes == n) {
            int *cum = ml_topo_ints(n); /* MPI's index: cumulative degrees */
            t.edges = ml_topo_ints(nedges);
            PMPI_Graph_get(comm, n, nedges, cum, t.edges);
            t.index = ml_topo_ints(n + 1);
            memcpy(t.index + 1, cum, sizeof(int) * (size_t)n);
            free(cum);
        }
    }
    if (rank == 0 && (status == MPI_CART || status == MPI_GRAPH || status == MPI_DIST_GRAPH)) {
        t.world = ml_topo_world(comm, n);
        pthread_mutex_lock(&TP.mu);
        int keep = TP.ntopo < ML_TOPO_MAX;
        if (keep) TP.topos[TP.ntopo++] = t;
        else TP.dropped++;
        pthread_mutex_unlock(&TP.mu);
        if (!keep) {
            free(t.dims);
            free(t.periods);
            free(t.world);
            free(t.index);
            free(t.edges);
        }
    } else {
        free(t.index);
        free(t.edges);
    }
    ml_thr.depth--;
}

/* Append ints as a JSON list ("[1,2,3]") at out + k (room reserved by the caller). */
static size_t ml_topo_list(char *out, size_t k, const int *v, int n, int as_bool)
{
    k += (size_t)sprintf(out + k, "[");
    for (int i = 0; i < n; i++)
        k += (size_t)(as_bool ? sprintf(out + k, "%s%s", i ? "," : "", v[i] ? "true" : "false")
                              : sprintf(out + k, "%s%d", i ? "," : "", v[i]));
    return k + (size_t)sprintf(out + k, "]");
}

/* This rank's records, one JSON object per line. */
static char *ml_topo_lines(size_t *len)
{
    size_t cap = 1, k = 0;
    for (int i = 0; i < TP.ntopo; i++) {
        const ml_topo_t *t = &TP.topos[i];
        cap += 128 + 12 * (size_t)(2 * t->n + 2 * t->ndims + (t->nedges > 0 ? t->nedges : 0) + 2);
    }
    char *out = malloc(cap);
    if (!out) {
        fprintf(stderr, "mpilens: out of memory writing the process topologies\n");
        abort();
    }
    out[0] = 0;
    for (int i = 0; i < TP.ntopo; i++) {
        const ml_topo_t *t = &TP.topos[i];
        k += (size_t)sprintf(out + k, "{\"kind\":\"%s\"", ml_topo_kind[t->kind]);
        if (t->kind == ML_TOPO_CART) {
            k += (size_t)sprintf(out + k, ",\"dims\":");
            k = ml_topo_list(out, k, t->dims, t->ndims, 0);
            k += (size_t)sprintf(out + k, ",\"periods\":");
            k = ml_topo_list(out, k, t->periods, t->ndims, 1);
        }
        k += (size_t)sprintf(out + k, ",\"ranks\":");
        k = ml_topo_list(out, k, t->world, t->n, 0);
        if (t->kind != ML_TOPO_CART) {
            k += (size_t)sprintf(out + k, ",\"edges\":");
            if (!t->index) {
                k += (size_t)sprintf(out + k, "null");
            } else {
                k += (size_t)sprintf(out + k, "[");
                for (int r = 0; r < t->n; r++) {
                    k += (size_t)sprintf(out + k, "%s", r ? "," : "");
                    k = ml_topo_list(out, k, t->edges + t->index[r], t->index[r + 1] - t->index[r], 0);
                }
                k += (size_t)sprintf(out + k, "]");
            }
        }
        k += (size_t)sprintf(out + k, "}\n");
    }
    *len = k;
    return out;
}

static char *ml_topo_json(void)
{
    size_t len = 0;
    char *mine = ml_topo_lines(&len);
    int n = (int)len, size = ml_world_size;
    /* the dropped topologies and the ranks with any line, summed on every rank: without
     * lines anywhere the gathers below (linear: rank 0 receives from every rank) are
     * skipped on every rank */
    unsigned long long v[2] = {TP.dropped, n > 0}, sum[2] = {0, 0};
    MPI_Request req; /* the profiler's end-of-run collectives wait by ml_fin_wait (fin.c) */
    PMPI_Iallreduce(v, sum, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD, &req);
    ml_fin_wait(&req);
    unsigned long long all_dropped = sum[0];
    if (!sum[1]) {
        free(mine);
        if (ml_world_rank != 0) return NULL;
        char *out = malloc(64);
        if (!out) {
            fprintf(stderr, "mpilens: out of memory writing the process topologies\n");
            abort();
        }
        snprintf(out, 64, "\"topologies\":[],\"topologies_dropped\":%llu", all_dropped);
        return out;
    }
    int *lens = ml_world_rank == 0 ? ml_topo_ints(size) : NULL;
    int *displ = ml_world_rank == 0 ? ml_topo_ints(size) : NULL;
    PMPI_Igather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    ml_fin_wait(&req);
    char *all = NULL;
    if (ml_world_rank == 0) {
        long long total = 0;
        for (int r = 0; r < size; r++) {
            displ[r] = (int)total;
            total += lens[r];
        }
        all = malloc((size_t)total + 1);
        if (!all) {
            fprintf(stderr, "mpilens: out of memory writing the process topologies\n");
            abort();
        }
        all[total] = 0;
    }
    PMPI_Igatherv(mine, n, MPI_CHAR, all, lens, displ, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
    ml_fin_wait(&req);
    free(mine);
    char *out = NULL;
    if (ml_world_rank == 0) {
        /* every kept line is at most the whole text; 64 more for the keys */
        out = malloc(strlen(all) + 64);
        if (!out) {
            fprintf(stderr, "mpilens: out of memory writing the process topologies\n");
            abort();
        }
        size_t k = (size_t)sprintf(out, "\"topologies\":[");
        int kept = 0;
        for (char *line = all, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
            if (kept == ML_TOPO_MAX) {
                all_dropped++;
                continue;
            }
            k += (size_t)sprintf(out + k, "%s%.*s", kept++ ? "," : "", (int)(nl - line), line);
        }
        sprintf(out + k, "],\"topologies_dropped\":%llu", all_dropped);
        free(all);
    }
    free(lens);
    free(displ);
    return out;
}

/* rank 0's header text from the reduction, NULL elsewhere and before it */
static char *ml_topo_header;

static void ml_topo_reduce(const ml_profile_t *p)
{
    (void)p;
    ml_topo_header = ml_topo_json(); /* collective */
}

static void ml_topo_header_json(ml_buf_t *b)
{
    if (ml_topo_header) ml_buf_printf(b, ",%s", ml_topo_header);
}

static void ml_topo_release(void)
{
    free(ml_topo_header);
    ml_topo_header = NULL;
}

const ml_module_t ml_module_topologies = {
    .name = "topologies",
    .reduce = ml_topo_reduce,
    .header_json = ml_topo_header_json,
    .release = ml_topo_release,
};
