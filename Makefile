# mpilens — top-level driver (docs/install.md).
#
#   make demo | test | build | install PREFIX=P   [MPI=openmpi|mpich|intelmpi]
#
# Set-up runs first (apt packages a fresh Debian lacks, the Python virtual
# environment .venv); the MPI is chosen after it, so a fresh machine works the
# first time: MPI= if given, else the MPI whose mpirun/mpiexec comes first on
# PATH (python -m mpilens.mpi_env flavour).  Each MPI builds in build/<mpi>.
VENV ?= .venv
PY := $(VENV)/bin/python
JOBS ?= 2
export PYTHONPATH := $(CURDIR)/python$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: all setup setup-test build demo test install install-targets clean distclean \
        _build _demo _test _install
# what `cmake --install` installs (the test programs are not built for it)
INSTALL_TARGETS := mpilens mpilens_read heat2d heat2d_f mpilens-bench mpilens-bench-alltoall mpilens-bench-repro
install-targets:
	@echo $(INSTALL_TARGETS)

all: build

# apt packages and .venv (idempotent; seconds when done).  `test` adds pytest and chromium.
setup:
	@bash .ci/setup
setup-test:
	@bash .ci/setup --test

# The targets below re-read this Makefile after set-up, when the MPIs exist.
build: setup
	@$(MAKE) --no-print-directory _build
demo: setup
	@$(MAKE) --no-print-directory _demo
test: setup-test
	@$(MAKE) --no-print-directory _test
install: setup
	@$(MAKE) --no-print-directory _install

# ---- after set-up -------------------------------------------------------------
ifneq ($(filter _%,$(MAKECMDGOALS)),)
ifeq ($(MPI),)
  MPI := $(shell $(PY) -m mpilens.mpi_env flavour)
  ifeq ($(MPI),)
    $(error no MPI found: the set-up above should have installed Open MPI and MPICH)
  endif
endif
BUILD ?= build/$(MPI)

ifeq ($(MPI),openmpi)
  MPICC ?= mpicc.openmpi
  MPIFC ?= mpifort.openmpi
else ifeq ($(MPI),mpich)
  MPICC ?= mpicc.mpich
  MPIFC ?= mpifort.mpich
else ifeq ($(MPI),intelmpi)
  # Intel MPI, e.g. from PyPI (.ci/setup --intel, or pip install "impi-devel<2021.19"):
  # I_MPI_ROOT is its prefix, else the directory above its mpirun on PATH.
  I_MPI_ROOT ?= $(shell $(PY) -m mpilens.mpi_env prefix)
  ifeq ($(I_MPI_ROOT),)
    $(error MPI=intelmpi: Intel MPI not found; set I_MPI_ROOT to its prefix)
  endif
  export I_MPI_ROOT
  MPICC ?= $(I_MPI_ROOT)/bin/mpicc
  MPIFC ?= $(I_MPI_ROOT)/bin/mpif90
  export LD_LIBRARY_PATH := $(I_MPI_ROOT)/lib:$(I_MPI_ROOT)/lib/libfabric$(if $(LD_LIBRARY_PATH),:$(LD_LIBRARY_PATH))
else ifeq ($(MPI),default)
  MPICC ?= mpicc
  MPIFC ?= mpifort
else
  $(error MPI=$(MPI) is invalid: expected openmpi, mpich or intelmpi)
endif

# The tests and the CLI use this build (paths.py: MPILENS_PREFIX comes first).
export MPILENS_MPI := $(MPI)
export MPILENS_PREFIX := $(abspath $(BUILD))
endif

_build:
	@mkdir -p $(dir $(BUILD))
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DPython3_EXECUTABLE=$(abspath $(PY)) \
	    -DCMAKE_C_COMPILER=$(MPICC) -DCMAKE_Fortran_COMPILER=$(MPIFC) >$(BUILD).configure.log 2>&1 \
	    || { cat $(BUILD).configure.log; exit 1; }
	@cmake --build $(BUILD) -j $(JOBS) $(if $(TARGETS),--target $(TARGETS))

# the demo builds what the documents' next commands need (INSTALL_TARGETS: the library,
# the reader's fast path libmpilens_read.so for report/html/diff, the examples and every
# mpilens-bench* for bench, tune and advise), not the test programs; make build and
# make test build everything
_demo:
	@$(MAKE) --no-print-directory _build TARGETS="$(INSTALL_TARGETS)"
	$(PY) -m mpilens.cli demo

# TESTS: test files or node ids (default all); PYTEST_ARGS: more pytest options, e.g.
# PYTEST_ARGS="-k flight" (tests/flaky.sh runs the tests this way)
TESTS ?= tests
_test: _build
	$(PY) -m pytest -q --durations=15 $(PYTEST_ARGS) $(TESTS)

# The runtime (cmake --install, with PREFIX/bin/mpilens, a relocatable script) and the
# virtual environment it runs, PREFIX/lib/mpilens/venv.  One PREFIX per MPI; the prefix
# can be moved as a whole.  The venv's python is a link to the python3 that made it:
# Debian's /usr/bin/python3, which every user can run, when it exists (not the python3
# first on PATH, which may be a pyenv one in a private home); PYTHON3= chooses another.
PYTHON3 ?= $(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3)
_install:
	@test -n "$(PREFIX)" || { echo "make install: give PREFIX=/path (one prefix per MPI, e.g. /opt/mpilens/$(MPI))"; exit 2; }
	@$(MAKE) --no-print-directory _build TARGETS="$(INSTALL_TARGETS)"
	cmake --install $(BUILD) --prefix $(PREFIX)
	$(PYTHON3) -m venv --clear $(PREFIX)/lib/mpilens/venv
	$(PREFIX)/lib/mpilens/venv/bin/python -m pip install -q --disable-pip-version-check .
	@echo "installed to $(PREFIX): module use $(PREFIX)/share/modulefiles && module load" \
	    "mpilens/$$($(PY) -c 'import mpilens; print(mpilens.__version__)')-$(MPI)"

clean:
	rm -rf build

distclean: clean
	rm -rf $(VENV)
