/* raise_segv: every rank sends itself SIGSEGV with raise() (no fault) after one
 * MPI_Barrier; a program that survives it prints "still running".  Under the flight
 * recorder the signal must still end the process (tests/test_flight.py). */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Barrier(MPI_COMM_WORLD);
    raise(SIGSEGV);
    printf("still running\n");
    MPI_Finalize();
    return 0;
}
