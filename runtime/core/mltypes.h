/* mpilens runtime: what the core's headers share, with no state and no
 * per-call code: the visibility and inlining macros, and the module interface
 * (module.h).  ml.h (the function records, the clock, the per-call path) and
 * hooks.h (the record kinds' per-call hooks) both start from here:
 *
 *     mltypes.h  <-  ml.h  <-  hooks.h  <-  flight.h  <-  the generated wrappers
 *
 * (hooks.h includes ml.h; ml.h does not include hooks.h).  A file that only
 * takes part in the profile or the run's steps as a module (module.h) needs
 * module.h and the headers of what it reads, not ml.h's per-call path. */
#ifndef MLENS_MLTYPES_H
#define MLENS_MLTYPES_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "module.h" /* the module interface and registry: ml_slot_t, ML_NMODULES */
/* The library's own declarations, in this header and in ml.h, hooks.h, late.h,
 * flight.h and callend.h, are hidden (after their system and MPI includes): the
 * library is built with hidden visibility, and a declaration the compiler knows
 * hidden is read with one instruction (mov sym(%rip)) where a default one takes a
 * GOT load first -- one instruction per global on every wrapper's path.  The few
 * exported functions say so with visibility("default"). */
#pragma GCC visibility push(hidden)

#define ML_TLS __thread __attribute__((tls_model("initial-exec")))
/* the per-call helpers: always inline into the wrappers (no call, no copy) */
#define ML_INLINE static inline __attribute__((always_inline))

#pragma GCC visibility pop
#endif
