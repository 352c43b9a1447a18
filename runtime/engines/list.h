/* The engines built into libmpilens.so, one line each, in the order the core
 * starts them (runtime/common/engine.h says what an engine provides).  An
 * engine <name> lives in runtime/engines/<name>/ and defines
 * `const ml_engine_t ml_engine_<name>`. */
ML_ENGINE(alltoall) /* adaptive MPI_Alltoall: docs/alltoall.md */
ML_ENGINE(repro)    /* reproducible MPI_SUM reductions: docs/repro.md */
ML_ENGINE(coll)     /* node-aware collectives, forced or adaptive: docs/collectives.md */
