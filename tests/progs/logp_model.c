/* The network model that `mpilens-bench logp` derives from its medians
 * (bench/src/logp.c, ml_logp_model), fed with medians chosen so that every
 * rule fires: a measured gap, a gap at or below the clock resolution (noise:
 * os(m) is used and listed under not_measured), a measured L and an L that
 * RTT(0)/2 - g(0) leaves below the resolution.  Prints one model per line;
 * tests/test_bench_families.py checks them value by value.  One process. */
#include <mpi.h>
#include <stdio.h>

#include "mlb.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    const long long sz[3] = {0, 8, 64};
    /* q = rtt, os, or, g (3 sizes each) */
    const double a[12] = {2e-6, 2.2e-6, 3e-6, 3e-7, 3.1e-7, 4e-7, 2e-7, 2.1e-7, 2.5e-7, -1e-8, 5e-7, 1e-9};
    const double b[12] = {5e-7, 6e-7, 7e-7, 3e-7, 3.1e-7, 4e-7, 2e-7, 2.1e-7, 2.5e-7, 3.5e-7, 5e-7, 6e-7};
    const double *cases[2] = {a, b};
    for (int c = 0; c < 2; c++) {
        ml_json *m = ml_logp_model(cases[c], sz, 3, 2e-8);
        printf("%s\n", ml_json_text(m));
        ml_json_free(m);
    }
    MPI_Finalize();
    return 0;
}
