/* The modules built into libmpilens.so (module.h says what a module
 * provides), one line each, in the order the core starts them and writes
 * their profile members.  A module <name> defines `const ml_module_t
 * ml_module_<name>` in a file of runtime/core/ (the build takes every .c file
 * there).  No include guard: included once per use with a different
 * ML_MODULE. */
ML_MODULE(hosts)     /* which ranks share a node: nodes.c, docs/profile-format.md "Nodes" */
ML_MODULE(machine)   /* machine facts: machine.c, docs/profile-format.md */
ML_MODULE(late)      /* late arrival per collective: late.c, docs/runtime.md "Late arrival" */
ML_MODULE(nodes)     /* node-level traffic: nodes.c, docs/profile-format.md "Nodes" */
ML_MODULE(callsites) /* call sites: callsite.c, docs/runtime.md "Call sites" */
ML_MODULE(regions)   /* regions: region.c, docs/runtime.md "Regions" */
ML_MODULE(timeline)  /* the time line: timeline.c, docs/runtime.md "Time line" */
ML_MODULE(comms)     /* communicators: comms.c, docs/runtime.md "Communicators" */
ML_MODULE(topologies) /* process topologies: topo.c, docs/profile-format.md */
ML_MODULE(flight)    /* the flight recorder: flight.c, docs/flight-recorder.md */
