/* sel_decide: the selection's decision rule (runtime/engines/select,
 * ml_sel_decide) on given times, without MPI (tests/test_coll_select.py).
 *
 *   sel_decide R C t[0][0] ... t[0][C-1] t[1][0] ... t[R-1][C-1]
 *
 * Times of R rounds (rows) and C candidates (columns; column 0 the MPI's
 * own).  Prints "choice=J against=K ratio=X lo=X hi=X" (K -1: none). */
#include <stdio.h>
#include <stdlib.h>

#include "select.h"

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int R = atoi(argv[1]), C = atoi(argv[2]);
    if (R < 1 || R > ML_SEL_MAX_ROUNDS || C < 1 || C > ML_SEL_MAXCAND || argc != 3 + R * C) {
        fprintf(stderr, "sel_decide: expected R C and R x C times\n");
        return 2;
    }
    double t[ML_SEL_MAX_ROUNDS * ML_SEL_MAXCAND];
    for (int i = 0; i < R * C; i++)
        t[i] = atof(argv[3 + i]);
    ml_sel_decision d;
    ml_sel_decide(t, R, C, &d);
    printf("choice=%d against=%d ratio=%.6g lo=%.6g hi=%.6g\n", d.choice, d.against, d.ratio,
           d.lo, d.hi);
    return 0;
}
