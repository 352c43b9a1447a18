/* a2a_sum_exact: the engine's exact sum (ml_sum_exact, engine linked in), on
 * any number of ranks.  Rank r contributes the 4 values
 *   0.1 (r + 1),  1e-7 (r + 3),  (r odd ? -1 : 1) x 12345.678901234 + r / 3,  0
 * (sums that in doubles depend on the order of additions) and prints the
 * result's bit patterns:
 *   rank=<r> sums=<hex>,<hex>,<hex>,<hex>
 * The test computes the expected bits itself: each value rounded to integer
 * picoseconds, summed exactly, divided by 1e12. */
#include "alltoall.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    double v[4] = {0.1 * (r + 1), 1e-7 * (r + 3), (r % 2 ? -1 : 1) * 12345.678901234 + r / 3.0, 0},
           s[4];
    int rc = ml_sum_exact(v, s, 4, MPI_COMM_WORLD);
    char line[128]; /* one write per line: launchers interleave partial lines */
    int n = snprintf(line, sizeof line, "rank=%d sums=", r);
    for (int i = 0; i < 4; i++) {
        uint64_t bits;
        memcpy(&bits, &s[i], sizeof bits);
        n += snprintf(line + n, sizeof line - (size_t)n, "%s%016" PRIx64, i ? "," : "", bits);
    }
    printf("%s\n", line);
    fflush(stdout);
    MPI_Finalize();
    return rc != MPI_SUCCESS;
}
