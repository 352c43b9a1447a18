/* Call sites four frames deep (tests/test_callsites.py): main -> outer ->
 * mid -> leaf -> MPI_Allreduce, 6 times, and nothing else between MPI_Init
 * and MPI_Finalize.  The call lines are marked DEEP-1 (innermost) to DEEP-4.
 *
 * Built twice (tests/CMakeLists.txt), both -O2 -g: callsite_deep with
 * -fomit-frame-pointer, where leaf and outer keep a frame pointer and mid
 * and main have none (a function without one between two with one: the
 * frame-pointer walk skips mid's caller unseen), and callsite_deep_fp with
 * -fno-omit-frame-pointer.  noinline, and an access after each call (no tail
 * call), keep every frame. */
#include <mpi.h>

#define NOINLINE __attribute__((noinline))
#ifdef MIXED_FP
#define KEEP_FP __attribute__((optimize("no-omit-frame-pointer")))
#else
#define KEEP_FP
#endif

static volatile int sink;
static int buf[8];

static NOINLINE KEEP_FP void leaf(int n)
{
    MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD); /* DEEP-1 */
    sink++;
}

static NOINLINE void mid(int n)
{
    volatile int pad[24]; /* a frame of its own size, without a frame pointer */
    pad[n % 24] = n;
    leaf(n); /* DEEP-2 */
    sink += pad[(n + 1) % 24];
}

static NOINLINE KEEP_FP void outer(int n)
{
    mid(n); /* DEEP-3 */
    sink++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    for (int i = 0; i < 6; i++) {
        outer(8); /* DEEP-4 */
        sink++;
    }
    MPI_Finalize();
    return 0;
}
