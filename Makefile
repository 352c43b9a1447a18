# mpilens — top-level driver.  MPI=openmpi|mpich selects the MPI to build against.
MPI ?= $(shell if command -v mpicc.openmpi >/dev/null 2>&1; then echo openmpi; elif command -v mpicc.mpich >/dev/null 2>&1; then echo mpich; else echo default; fi)
BUILD ?= build/$(MPI)
PYTHON ?= python3
JOBS ?= 2

ifeq ($(MPI),openmpi)
  MPICC ?= mpicc.openmpi
  MPIFC ?= mpifort.openmpi
else ifeq ($(MPI),mpich)
  MPICC ?= mpicc.mpich
  MPIFC ?= mpifort.mpich
else ifeq ($(MPI),intelmpi)
  # Intel MPI, e.g. from PyPI (pip install "impi-devel<2021.19"): I_MPI_ROOT is its prefix.
  ifeq ($(I_MPI_ROOT),)
    $(error MPI=intelmpi needs I_MPI_ROOT set to the Intel MPI prefix)
  endif
  MPICC ?= $(I_MPI_ROOT)/bin/mpicc
  MPIFC ?= $(I_MPI_ROOT)/bin/mpif90
  export LD_LIBRARY_PATH := $(I_MPI_ROOT)/lib:$(I_MPI_ROOT)/lib/libfabric$(if $(LD_LIBRARY_PATH),:$(LD_LIBRARY_PATH))
else
  MPICC ?= mpicc
  MPIFC ?= mpifort
endif

export MPILENS_MPI := $(MPI)
export MPILENS_BUILD := $(abspath $(BUILD))

.PHONY: all setup build python demo test clean

all: build

# Installs apt/pip packages a fresh Debian machine lacks (idempotent, fast when done).
setup:
	@bash .ci/setup

python: setup

build:
	@mkdir -p $(dir $(BUILD))
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release \
	    -DCMAKE_C_COMPILER=$(MPICC) -DCMAKE_Fortran_COMPILER=$(MPIFC) >$(BUILD).configure.log 2>&1 \
	    || { cat $(BUILD).configure.log; exit 1; }
	@cmake --build $(BUILD) -j $(JOBS)

# `mpilens demo` from this checkout's python/ (works even where the editable install could not be made)
demo: python build
	PYTHONPATH=$(CURDIR)/python$${PYTHONPATH:+:$$PYTHONPATH} $(PYTHON) -m mpilens.cli demo

test: python build
	$(PYTHON) -m pytest -q tests

clean:
	rm -rf build
