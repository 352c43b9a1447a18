/* Starting engines: the agreement that stops a job on a bad setting, and an
 * engine started on its own (engine.h).  PMPI calls only. */
#include "engine.h"

#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

void ml_agree_or_stop(const char *msg)
{
    int bad = msg != NULL, any = 0, rank, size;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &size);
    PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any)
        return;
    /* one line from the lowest failing rank (rank 0 in practice) */
    int first = bad ? rank : size, low = 0;
    PMPI_Allreduce(&first, &low, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (bad && rank == low) {
        fprintf(stderr, "%s\n", msg);
        fflush(stderr);
    }
    PMPI_Barrier(MPI_COMM_WORLD);
    PMPI_Finalize();
    _exit(2);
}

int ml_engine_start(const ml_engine_t *e)
{
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    ml_buf_t err = {0};
    ml_setting_part part = {e->name, e->settings};
    int bad = ml_settings_load(&part, 1, 0, &err) != 0;
    if (!bad && rank == 0 && e->check)
        bad = e->check(&err) != 0;
    ml_agree_or_stop(bad ? err.p : NULL);
    ml_buf_free(&err);
    return e->init ? e->init() : 0;
}
