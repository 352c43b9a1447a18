/* Call sites of point-to-point calls (tests/test_callsites.py,
 * test_p2p_sites_exact): two ranks send to each other and receive from each
 * other from source lines marked P2P-*, a known number of times with known
 * sizes (the wrappers of sends and receives count the call's bytes in a local
 * copy, not the thread's: this pins what reaches each site).  Built -g -O0
 * (tests/CMakeLists.txt). */
#include <mpi.h>

static char sb[1000], rb[1000];

int main(int argc, char **argv)
{
    int rank;
    MPI_Request rq;
    MPI_Status st;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); /* P2P-RANK */
    int peer = 1 - rank;
    for (int i = 0; i < 3; i++) {
        MPI_Isend(sb, 40, MPI_BYTE, peer, 1, MPI_COMM_WORLD, &rq); /* P2P-ISEND */
        MPI_Recv(rb, 40, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* P2P-RECV */
        MPI_Wait(&rq, MPI_STATUS_IGNORE); /* P2P-WAIT */
    }
    for (int i = 0; i < 5; i++) {
        MPI_Irecv(rb, 1000, MPI_BYTE, peer, 2, MPI_COMM_WORLD, &rq); /* P2P-IRECV */
        MPI_Send(sb, 300, MPI_BYTE, peer, 2, MPI_COMM_WORLD); /* P2P-SEND */
        MPI_Wait(&rq, &st); /* P2P-WAIT2 */
    }
    for (int i = 0; i < 2; i++) {
        MPI_Send(sb, 8, MPI_BYTE, MPI_PROC_NULL, 3, MPI_COMM_WORLD); /* P2P-SNULL */
        MPI_Recv(rb, 8, MPI_BYTE, MPI_PROC_NULL, 3, MPI_COMM_WORLD, &st); /* P2P-RNULL */
    }
    MPI_Finalize();
    return 0;
}
