# The version (one definition: python/mpilens/__init__.py) and the MPI this build is
# for, told by the macros of its mpi.h.  Written to share/mpilens/runtime.json, which
# `mpilens --version` and the CLI's runtime lookup read (docs/install.md).
file(STRINGS ${CMAKE_SOURCE_DIR}/python/mpilens/__init__.py _ml_ver REGEX "^__version__ = ")
string(REGEX REPLACE "^__version__ = \"([^\"]+)\".*" "\\1" MPILENS_VERSION "${_ml_ver}")

file(WRITE ${CMAKE_BINARY_DIR}/mpi_version.c
     "#include <mpi.h>\nMPILENS_OMPI OMPI_MAJOR_VERSION.OMPI_MINOR_VERSION.OMPI_RELEASE_VERSION\n"
     "MPILENS_IMPI I_MPI_VERSION\nMPILENS_MPICH MPICH_VERSION\n")
execute_process(COMMAND ${CMAKE_C_COMPILER} -E -P ${CMAKE_BINARY_DIR}/mpi_version.c
                OUTPUT_VARIABLE _ml_pp ERROR_QUIET RESULT_VARIABLE _ml_rc)
set(MPILENS_MPI "unknown")
set(MPILENS_MPI_VERSION "")
if(_ml_pp MATCHES "MPILENS_OMPI ([0-9]+) *\\. *([0-9]+) *\\. *([0-9]+)")
  set(MPILENS_MPI "openmpi")
  set(MPILENS_MPI_VERSION "Open MPI ${CMAKE_MATCH_1}.${CMAKE_MATCH_2}.${CMAKE_MATCH_3}")
elseif(_ml_pp MATCHES "MPILENS_IMPI \"([^\"]+)\"")   # Intel MPI also defines MPICH_VERSION
  set(MPILENS_MPI "intelmpi")
  set(MPILENS_MPI_VERSION "Intel MPI ${CMAKE_MATCH_1}")
elseif(_ml_pp MATCHES "MPILENS_MPICH \"([^\"]+)\"")
  set(MPILENS_MPI "mpich")
  set(MPILENS_MPI_VERSION "MPICH ${CMAKE_MATCH_1}")
endif()
message(STATUS "mpilens ${MPILENS_VERSION} for ${MPILENS_MPI_VERSION} (${MPILENS_MPI})")
file(WRITE ${CMAKE_BINARY_DIR}/share/mpilens/runtime.json
     "{\"version\": \"${MPILENS_VERSION}\", \"mpi\": \"${MPILENS_MPI}\", "
     "\"mpi_library\": \"${MPILENS_MPI_VERSION}\", \"c_compiler\": \"${CMAKE_C_COMPILER}\"}\n")
