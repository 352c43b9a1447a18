/* The module registry: every module of modules_list.h (module.h says what a
 * module provides), and the core's loops over them, one per step.  Like
 * engines.c for the engines: adding a module is its own file and one line in
 * modules_list.h. */
#include "hooks.h"
#include "profile.h" /* ml_fin_mark */

#define ML_MODULE(name) extern const ml_module_t ml_module_##name;
#include "modules_list.h"
#undef ML_MODULE

#define ML_MODULE(name) &ml_module_##name,
const ml_module_t *const ml_modules[] = {
#include "modules_list.h"
    NULL};
#undef ML_MODULE

_Static_assert(sizeof ml_modules / sizeof *ml_modules == ML_NMODULES + 1, "one descriptor per line of modules_list.h");
_Static_assert(ML_NMODULES <= 32, "ml_hot.kinds_rare holds one bit per module");

/* each module's hook X, if it has one, called with the arguments given */
#define ML_EACH(X, ...)                                                                                              \
    for (int i = 0; ml_modules[i]; i++)                                                                              \
        if (ml_modules[i]->X) ml_modules[i]->X(__VA_ARGS__)

int ml_modules_settings(ml_setting_part *p, int max)
{
    int n = 0;
    for (int i = 0; ml_modules[i] && n < max; i++)
        if (ml_modules[i]->settings) p[n++] = (ml_setting_part){"profiler", ml_modules[i]->settings};
    return n;
}

void ml_modules_early(void) { ML_EACH(early); }

void ml_modules_init(void)
{
    for (int i = 0; ml_modules[i]; i++) {
        int on = ml_modules[i]->init ? ml_modules[i]->init() : 0;
        if ((on & ML_HOOKS_CALL) && ml_modules[i]->call) ml_module_call_on(i, 1);
        else on &= ~ML_HOOKS_CALL;
        ml_hot.hooks_on |= on;
    }
}

void ml_modules_attach(ml_slot_t *s) { ML_EACH(attach, s); }

size_t ml_modules_bytes(void)
{
    size_t n = 0;
    for (int i = 0; ml_modules[i]; i++)
        if (ml_modules[i]->bytes) n += ml_modules[i]->bytes();
    return n;
}

void ml_modules_reset(ml_slot_t *s) { ML_EACH(reset, s); }
void ml_modules_start(void) { ML_EACH(start); }
void ml_modules_finalize_enter(void) { ML_EACH(finalize_enter); }

void ml_modules_finalize(void)
{
    for (int i = 0; ml_modules[i]; i++)
        if (ml_modules[i]->finalize) {
            ml_modules[i]->finalize();
            ml_fin_mark(ml_modules[i]->name);
        }
}

void ml_modules_reduce(const ml_profile_t *p)
{
    for (int i = 0; ml_modules[i]; i++)
        if (ml_modules[i]->reduce) {
            ml_modules[i]->reduce(p);
            ml_fin_mark(ml_modules[i]->name);
        }
}

void ml_modules_header_where_json(ml_buf_t *b) { ML_EACH(header_where_json, b); }
void ml_modules_header_json(ml_buf_t *b) { ML_EACH(header_json, b); }
void ml_modules_rank_where_json(ml_buf_t *b) { ML_EACH(rank_where_json, b); }
void ml_modules_rank_json(ml_buf_t *b) { ML_EACH(rank_json, b); }
void ml_modules_function_json(ml_buf_t *b, const ml_fdata_t *f) { ML_EACH(function_json, b, f); }
void ml_modules_release(void) { ML_EACH(release); }
void ml_modules_stop(int profile_written) { ML_EACH(stop, profile_written); }

/* Behind ml_hot.kinds_rare's one test in ml_call_done (callend.h; the shared slot's
 * lock is held): the out-of-line hooks of the modules whose bit is set. */
void ml_modules_rare_end(ml_slot_t *S, const ml_call_t *c)
{
    for (unsigned m = ml_hot.kinds_rare; m; m &= m - 1) ml_modules[__builtin_ctz(m)]->call(S, c);
}
