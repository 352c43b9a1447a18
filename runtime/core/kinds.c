/* The record-kind registry: every kind of kinds_list.h (mltypes.h says what a
 * kind provides), and the core's loops over them.  Like engines.c for the
 * engines: adding a kind is its own file and one line in kinds_list.h. */
#include "hooks.h"

#define ML_KIND(name) extern const ml_kind_t ml_kind_##name;
#include "kinds_list.h"
#undef ML_KIND

#define ML_KIND(name) &ml_kind_##name,
const ml_kind_t *const ml_kinds[] = {
#include "kinds_list.h"
    NULL};
#undef ML_KIND

_Static_assert(sizeof ml_kinds / sizeof *ml_kinds == ML_NKINDS + 1, "one descriptor per line of kinds_list.h");


_Static_assert(ML_NKINDS <= 32, "ml_hot.kinds_rare holds one bit per kind");

void ml_kind_call_on(int kind, int on)
{
    if (on) __atomic_fetch_or(&ml_hot.kinds_rare, 1u << kind, __ATOMIC_RELAXED);
    else __atomic_fetch_and(&ml_hot.kinds_rare, ~(1u << kind), __ATOMIC_RELAXED);
}

void ml_kinds_init(void)
{
    for (int i = 0; ml_kinds[i]; i++) {
        int on = ml_kinds[i]->init ? ml_kinds[i]->init() : 0;
        if ((on & ML_HOOKS_CALL) && ml_kinds[i]->call) ml_kind_call_on(i, 1);
        else on &= ~ML_HOOKS_CALL;
        ml_hot.hooks_on |= on;
    }
}

void ml_kinds_attach(ml_slot_t *s)
{
    for (int i = 0; ml_kinds[i]; i++)
        if (ml_kinds[i]->attach) ml_kinds[i]->attach(s);
}

size_t ml_kinds_bytes(void)
{
    size_t n = 0;
    for (int i = 0; ml_kinds[i]; i++)
        if (ml_kinds[i]->bytes) n += ml_kinds[i]->bytes();
    return n;
}

void ml_kinds_reset(ml_slot_t *s)
{
    for (int i = 0; ml_kinds[i]; i++)
        if (ml_kinds[i]->reset) ml_kinds[i]->reset(s);
}

void ml_kinds_header_json(ml_buf_t *b)
{
    for (int i = 0; ml_kinds[i]; i++)
        if (ml_kinds[i]->header_json) ml_kinds[i]->header_json(b);
}

void ml_kinds_rank_json(ml_buf_t *b)
{
    for (int i = 0; ml_kinds[i]; i++)
        if (ml_kinds[i]->rank_json) ml_kinds[i]->rank_json(b);
}

int ml_kinds_settings(ml_setting_part *p, int max)
{
    int n = 0;
    for (int i = 0; ml_kinds[i] && n < max; i++)
        if (ml_kinds[i]->settings) p[n++] = (ml_setting_part){"profiler", ml_kinds[i]->settings};
    return n;
}

/* Behind ml_hot.kinds_rare's one test in ml_call_done (callend.h; the shared slot's
 * lock is held): the out-of-line hooks of the kinds whose bit is set. */
void ml_kinds_rare_end(ml_slot_t *S, const ml_call_t *c)
{
    for (unsigned m = ml_hot.kinds_rare; m; m &= m - 1) ml_kinds[__builtin_ctz(m)]->call(S, c);
}
