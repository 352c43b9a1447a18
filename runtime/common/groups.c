/* Ranks of a group in MPI_COMM_WORLD (groups.h). */
#include "groups.h"

#include <stdlib.h>

int *ml_group_world_ranks(MPI_Group g, int n)
{
    size_t len = sizeof(int) * (size_t)(n > 0 ? n : 1);
    int *in = malloc(len), *out = malloc(len);
    MPI_Group wg;
    if (!in || !out || PMPI_Comm_group(MPI_COMM_WORLD, &wg) != MPI_SUCCESS) {
        free(in);
        free(out);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        in[i] = i;
    if (PMPI_Group_translate_ranks(g, n, in, wg, out) != MPI_SUCCESS)
        for (int i = 0; i < n; i++)
            out[i] = MPI_UNDEFINED;
    PMPI_Group_free(&wg);
    free(in);
    return out;
}
