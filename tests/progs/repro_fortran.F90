! The published example (REFERENCE 4) through the Fortran bindings: every rank
! contributes 2**-60 except rank 1 (+1) and rank P-1 (-1).  Rank 0 prints
! "<name> <raw bits in hex>" for DOUBLE PRECISION, REAL and DOUBLE COMPLEX sums.
! Built with `use mpi`, or with mpif.h (-DMPIF_H) where the compiler cannot read
! the MPI's module (gfortran with Intel MPI).
program repro_fortran
#ifndef MPIF_H
  use mpi
#endif
  use iso_fortran_env, only: int32, int64, real32, real64
  implicit none
#ifdef MPIF_H
  include 'mpif.h'
#endif
  integer :: ierr, rank, np
  real(real64) :: x, s, v(2)
  real(real32) :: xr, sr
  complex(real64) :: xz, sz
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, np, ierr)
  x = 2.0_real64**(-60)
  if (rank == 1) x = 1.0_real64
  if (rank == np - 1) x = -1.0_real64
  call MPI_Allreduce(x, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call show('dp_allreduce', transfer(s, 0_int64))
  s = 0
  call MPI_Reduce(x, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call show('dp_reduce', transfer(s, 0_int64))
  v = [x, -x]
  call MPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call show('dp_allreduce_inplace_1', transfer(v(1), 0_int64))
  call show('dp_allreduce_inplace_2', transfer(v(2), 0_int64))
  xr = real(x, real32)
  call MPI_Allreduce(xr, sr, 1, MPI_REAL, MPI_SUM, MPI_COMM_WORLD, ierr)
  call show('real_allreduce', int(transfer(sr, 0_int32), int64))
  xz = cmplx(x, -x, kind=real64)
  call MPI_Allreduce(xz, sz, 1, MPI_DOUBLE_COMPLEX, MPI_SUM, MPI_COMM_WORLD, ierr)
  call show('dc_allreduce_re', transfer(real(sz), 0_int64))
  call show('dc_allreduce_im', transfer(aimag(sz), 0_int64))
  call MPI_Finalize(ierr)
contains
  subroutine show(name, bits)
    character(*), intent(in) :: name
    integer(int64), intent(in) :: bits
    if (rank == 0) write(*, '(A,1X,Z16.16)') name, bits
  end subroutine show
end program repro_fortran
