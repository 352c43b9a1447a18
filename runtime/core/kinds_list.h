/* The record kinds built into libmpilens.so, one line each, in the order the
 * core starts them and writes their profile members (mltypes.h says what a
 * kind provides).  A kind <name> defines `const ml_kind_t ml_kind_<name>` in
 * its own file of runtime/core/ (the build takes every .c file there).  No
 * include guard: included once per use with a different ML_KIND. */
ML_KIND(callsites) /* call sites: callsite.c, docs/runtime.md "Call sites" */
ML_KIND(regions)   /* regions: region.c, docs/runtime.md "Regions" */
ML_KIND(timeline)  /* the time line: timeline.c, docs/runtime.md "Time line" */
ML_KIND(comms)     /* communicators: comms.c, docs/runtime.md "Communicators" */
