/* instr_ops: the MPI calls whose cost bench/instr/instr.py counts with
 * callgrind, one process (valgrind --tool=callgrind --collect-atstart=no).
 *
 * Each operation runs N times natively (PMPI_*, which bypasses libmpilens even
 * when it is preloaded) and N times through the interposed MPI_* entry points;
 * each loop is collected alone (CALLGRIND_TOGGLE_COLLECT) and dumped under its
 * own label (CALLGRIND_DUMP_STATS_AT "op/mode"), so the script reads one total
 * per loop.  Warm-up calls before each loop fill the caches (type sizes,
 * communicator tables, call-site records, the timing policy's first calls).
 *
 * The call sites are reached through `depth` nested non-inlined frames
 * (noinline + a volatile step), so MPILENS_CALLSITES=2 walks a real stack.
 *
 * Usage: instr_ops N   (prints nothing; the counts are in callgrind's dumps) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <valgrind/callgrind.h>

enum { OP_RANK, OP_SENDRECV, OP_ISENDWAIT, OP_ALLREDUCE, OP_SENDRECV_DUP, NOPS };
static const char *const op_name[NOPS] = {"comm_rank", "send_recv", "isend_recv_wait", "allreduce", "send_recv_dup"};
static volatile int sink;
static MPI_Comm dup; /* a duplicate of MPI_COMM_WORLD: peers translated through its group */

#define NOINLINE __attribute__((noinline))

static NOINLINE void one(int op, int prof)
{
    static char sb[8], rb[8];
    static double x = 1.0, y;
    MPI_Request rq;
    int r;
    if (prof) {
        switch (op) {
        case OP_RANK: MPI_Comm_rank(MPI_COMM_WORLD, &r); sink = r; break;
        case OP_SENDRECV:
            MPI_Send(sb, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
            MPI_Recv(rb, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case OP_ISENDWAIT:
            MPI_Isend(sb, 8, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &rq);
            MPI_Recv(rb, 8, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Wait(&rq, MPI_STATUS_IGNORE);
            break;
        case OP_ALLREDUCE: MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
        case OP_SENDRECV_DUP:
            MPI_Send(sb, 8, MPI_BYTE, 0, 7, dup);
            MPI_Recv(rb, 8, MPI_BYTE, 0, 7, dup, MPI_STATUS_IGNORE);
            break;
        }
    } else {
        switch (op) {
        case OP_RANK: PMPI_Comm_rank(MPI_COMM_WORLD, &r); sink = r; break;
        case OP_SENDRECV:
            PMPI_Send(sb, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD);
            PMPI_Recv(rb, 8, MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            break;
        case OP_ISENDWAIT:
            PMPI_Isend(sb, 8, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &rq);
            PMPI_Recv(rb, 8, MPI_BYTE, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            PMPI_Wait(&rq, MPI_STATUS_IGNORE);
            break;
        case OP_ALLREDUCE: PMPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); break;
        case OP_SENDRECV_DUP:
            PMPI_Send(sb, 8, MPI_BYTE, 0, 7, dup);
            PMPI_Recv(rb, 8, MPI_BYTE, 0, 7, dup, MPI_STATUS_IGNORE);
            break;
        }
    }
}

/* four frames of application stack above the MPI call: the call site at any depth up to 4 */
static NOINLINE void f1(int op, int prof) { one(op, prof); sink++; }
static NOINLINE void f2(int op, int prof) { f1(op, prof); sink++; }
static NOINLINE void f3(int op, int prof) { f2(op, prof); sink++; }

static NOINLINE void loop(int op, int prof, long n)
{
    for (long i = 0; i < n; i++) f3(op, prof);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 1000;
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 1) {
        fprintf(stderr, "instr_ops: run one process (messages go to self)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    char label[64];
    for (int op = 0; op < NOPS; op++) {
        for (int prof = 0; prof < 2; prof++) {
            loop(op, prof, 200); /* warm-up: past the timing policy's first calls too */
            CALLGRIND_TOGGLE_COLLECT;
            loop(op, prof, n);
            CALLGRIND_TOGGLE_COLLECT;
            snprintf(label, sizeof label, "%s/%s", op_name[op], prof ? "profiled" : "native");
            CALLGRIND_DUMP_STATS_AT(label);
        }
    }
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
