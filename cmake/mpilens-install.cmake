# `cmake --install build/<mpi> --prefix P` (docs/install.md).  One prefix per MPI:
# libmpilens.so, mpilens-exec and the benchmarks are built against one MPI's ABI.
#   P/lib/libmpilens.so               the profiler (LD_PRELOAD, or -lmpilens)
#   P/include/mpilens.h               its public API (link with -lmpilens)
#   P/bin/mpilens-exec                per-rank launcher prefix (finds ../lib/libmpilens.so)
#   P/bin/mpilens                     the command: runs P/lib/mpilens/venv (relocatable script;
#                                     the venv is made by make install or by hand)
#   P/bin/mpilens-bench*              the benchmark programs
#   P/libexec/mpilens/heat2d{,_f}     the bundled examples (mpilens demo)
#   P/share/mpilens/                  runtime.json, the examples' sources, the docs
#   P/lib/pkgconfig/mpilens.pc        pkg-config (relocatable: ${pcfiledir})
#   P/share/modulefiles/mpilens/<v>-<mpi>  Environment Modules / Lmod modulefile (relocatable;
#                                     mpilens/0.1.0-openmpi, mpilens/0.1.0-mpich: they conflict)
include(GNUInstallDirs)
install(TARGETS mpilens LIBRARY DESTINATION lib)
install(TARGETS mpilens_read LIBRARY DESTINATION lib)  # the reader's fast path
install(FILES ${CMAKE_SOURCE_DIR}/runtime/include/mpilens.h DESTINATION include)
install(FILES ${CMAKE_SOURCE_DIR}/runtime/include/mpilens_regions_f.c DESTINATION share/mpilens)
install(PROGRAMS ${CMAKE_BINARY_DIR}/bin/mpilens-exec DESTINATION bin)
install(PROGRAMS ${CMAKE_SOURCE_DIR}/cmake/mpilens-launcher.sh DESTINATION bin RENAME mpilens)
foreach(t mpilens-bench mpilens-bench-alltoall mpilens-bench-repro)
  if(TARGET ${t})
    install(TARGETS ${t} RUNTIME DESTINATION bin)
  endif()
endforeach()
foreach(t heat2d heat2d_f)
  if(TARGET ${t})
    install(TARGETS ${t} RUNTIME DESTINATION libexec/mpilens)
  endif()
endforeach()
install(FILES ${CMAKE_BINARY_DIR}/share/mpilens/runtime.json DESTINATION share/mpilens)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/examples/ DESTINATION share/mpilens/examples
        FILES_MATCHING PATTERN "*.c" PATTERN "*.F90" PATTERN "*.f90" PATTERN "*.h")
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs/ DESTINATION share/mpilens/docs
        PATTERN notes EXCLUDE)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION share/mpilens)
configure_file(${CMAKE_SOURCE_DIR}/cmake/mpilens.pc.in ${CMAKE_BINARY_DIR}/mpilens.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/mpilens.pc DESTINATION lib/pkgconfig)
configure_file(${CMAKE_SOURCE_DIR}/cmake/modulefile.in ${CMAKE_BINARY_DIR}/modulefile @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/modulefile DESTINATION share/modulefiles/mpilens
        RENAME ${MPILENS_VERSION}-${MPILENS_MPI})
