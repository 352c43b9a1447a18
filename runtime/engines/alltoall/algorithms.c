/* The algorithm table: name, function and cost model of each candidate, in
 * the order of the ML_A2A_* enum (alltoall.h), and the values of
 * MPILENS_ALLTOALL ("native", "adaptive", then every algorithm). */
#include <string.h>

#include "alltoall.h"

#define ALG(name) {#name, ml_a2a_##name, ml_a2a_cost_##name},
const ml_a2a_alg ml_a2a_algs[ML_A2A_NALG] = {ML_A2A_LIST(ALG)};
#undef ALG

#define NAME(name) #name,
const char *const ml_a2a_modes[ML_A2A_NALG + 3] = {"native", "adaptive", ML_A2A_LIST(NAME) NULL};
#undef NAME
const char *const *const ml_a2a_names = ml_a2a_modes + 2;

int ml_a2a_find(const char *name)
{
    for (int i = 0; i < ML_A2A_NALG; i++)
        if (strcmp(name, ml_a2a_names[i]) == 0)
            return i;
    return -1;
}
