! Fortran twin of callsite_c.c (tests/test_callsites.py): MPI_Allreduce
! from three known source lines (SITE-A/B/C), 3, 5 and 7 times, with 4, 16
! and 64 integers; nothing else between MPI_Init and MPI_Finalize.
! Built with -g -O0; with `use mpi`, or mpif.h where the module cannot be read.
program callsite_f
#if !defined(MPIF_H)
  use mpi
#endif
  implicit none
#ifdef MPIF_H
  include 'mpif.h'
#endif
  integer :: ierr, i
  integer :: buf(64)
  buf = 1
  call MPI_Init(ierr)
  do i = 1, 3
    call MPI_Allreduce(MPI_IN_PLACE, buf, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr) ! SITE-B
  end do
  do i = 1, 5
    call MPI_Allreduce(MPI_IN_PLACE, buf, 16, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr) ! SITE-C
  end do
  do i = 1, 7
    call site_a(64) ! CALLER-A
  end do
  call MPI_Finalize(ierr)
contains
  subroutine site_a(n)
    integer, intent(in) :: n
    integer :: e
    call MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, e) ! SITE-A
  end subroutine site_a
end program callsite_f
