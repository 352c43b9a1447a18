/* What a run remembers across communicators (all under ml_a2a.lock, taken here).
 *
 * The zero-byte part of the P-LogP parameters per group of processes (world
 * ranks in communicator order): measured on the group's first Grouping,
 * reused by its later message sizes and by every communicator over the same
 * processes (a duplicate, a re-created one).  A communicator uses it only if
 * all its ranks still hold the same measurement (agreed in state.c), so all
 * measure or none, and all predict from the same values.
 *
 * Choices learned in this run, per communicator size and ranks per node (the
 * tuning file's key, without a file): a later communicator with the same key
 * starts in Running.  Ranks hold different choices when they took part in
 * different communicators, so a communicator reuses a size range only if all
 * its ranks hold the same choice for it (agreed in state.c's reduction: the
 * whole row, exact).  KEPT_KEYS keys, later ones not kept. */
#include <stdlib.h>
#include <string.h>

#include "alltoall.h"

/* Groups of processes as world ranks in communicator order (the key of the
 * kept P-LogP parts and of the shared duplicates). */
int ml_a2a_same_group(const int *a, int P, const int *b, int Q)
{
    return P == Q && memcmp(a, b, sizeof(int) * (size_t)P) == 0;
}

int *ml_a2a_copy_group(const int *wr, int P)
{
    int *c = malloc(sizeof(int) * (size_t)P);
    return c ? memcpy(c, wr, sizeof(int) * (size_t)P) : NULL;
}

/* ---- zero-byte P-LogP parts ---- */

/* under the lock */
static struct a2a_p0 *p0_find(const int *wr, int P)
{
    for (int i = 0; wr && i < P0_CACHE; i++) {
        struct a2a_p0 *c = &ml_a2a.p0[i];
        if (c->used && ml_a2a_same_group(c->wr, c->P, wr, P))
            return c;
    }
    return NULL;
}

void ml_a2a_p0_put(const int *wr, int P, int uid, const ml_plogp0 *z)
{
    pthread_mutex_lock(&ml_a2a.lock);
    struct a2a_p0 *c = p0_find(wr, P);
    if (!c) {
        c = &ml_a2a.p0[0];
        for (int i = 1; i < P0_CACHE; i++)
            if (ml_a2a.p0[i].used < c->used)
                c = &ml_a2a.p0[i];
        int *copy = ml_a2a_copy_group(wr, P);
        if (!copy) {
            pthread_mutex_unlock(&ml_a2a.lock);
            return;
        }
        free(c->wr);
        c->wr = copy;
        c->P = P;
    }
    c->z = *z;
    c->uid = uid;
    c->used = ++ml_a2a.p0_tick;
    pthread_mutex_unlock(&ml_a2a.lock);
}

/* The kept zero-byte part of group wr into z: the uid of the communicator
 * that measured it, or -1 if none is held. */
int ml_a2a_p0_get(const int *wr, int P, ml_plogp0 *z)
{
    pthread_mutex_lock(&ml_a2a.lock);
    struct a2a_p0 *c = p0_find(wr, P);
    int uid = c ? c->uid : -1;
    if (c) {
        *z = c->z;
        c->used = ++ml_a2a.p0_tick;
    }
    pthread_mutex_unlock(&ml_a2a.lock);
    return uid;
}

/* ---- learned choices ---- */

void ml_a2a_keep_choice(int P, int rpn, long long bytes, int alg)
{
    pthread_mutex_lock(&ml_a2a.lock);
    int i = 0, n = ml_a2a.nkept;
    while (i < n && (ml_a2a.kept[i].P != P || ml_a2a.kept[i].rpn != rpn))
        i++;
    if (i == n && n < KEPT_KEYS) {
        ml_a2a.kept[n].P = P;
        ml_a2a.kept[n].rpn = rpn;
        memset(ml_a2a.kept[n].alg, -1, sizeof ml_a2a.kept[n].alg);
        ml_a2a.nkept = ++n;
    }
    if (i < n)
        ml_a2a.kept[i].alg[ml_a2a_range_of(bytes)] = (signed char)alg;
    pthread_mutex_unlock(&ml_a2a.lock);
}

/* This rank's kept row for (P, rpn) into alg (-1: none). */
void ml_a2a_kept_row(int P, int rpn, int alg[ML_RANGES])
{
    for (int j = 0; j < ML_RANGES; j++)
        alg[j] = -1;
    pthread_mutex_lock(&ml_a2a.lock);
    for (int i = 0; i < ml_a2a.nkept; i++)
        if (ml_a2a.kept[i].P == P && ml_a2a.kept[i].rpn == rpn)
            for (int j = 0; j < ML_RANGES; j++)
                alg[j] = ml_a2a.kept[i].alg[j];
    pthread_mutex_unlock(&ml_a2a.lock);
}
