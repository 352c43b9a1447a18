/* The engine registry: every engine of runtime/engines/list.h. */
#include "ml.h"

#define ML_ENGINE(name) extern const ml_engine_t ml_engine_##name;
#include "engines/list.h"
#undef ML_ENGINE

#define ML_ENGINE(name) &ml_engine_##name,
const ml_engine_t *const ml_engines[] = {
#include "engines/list.h"
    NULL};
#undef ML_ENGINE
