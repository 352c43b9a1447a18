! Fortran call sites two frames deep without frame pointers
! (tests/test_callsites.py): the program -> outer -> leaf -> MPI_Allreduce,
! 4 times, nothing else between MPI_Init and MPI_Finalize.  The call lines
! are marked FDEEP-1 (in leaf) and FDEEP-2 (in outer).  Built with
! -O2 -g -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls
! (tests/CMakeLists.txt): every frame kept, none with a frame pointer.
module deep_m
#if !defined(MPIF_H)
  use mpi
#endif
  implicit none
#ifdef MPIF_H
  include 'mpif.h'
#endif
  integer :: buf(8), calls = 0
contains
  subroutine leaf(n)
    integer, intent(in) :: n
    integer :: e
    call MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, e) ! FDEEP-1
    calls = calls + 1
  end subroutine leaf
  subroutine outer(n)
    integer, intent(in) :: n
    call leaf(n) ! FDEEP-2
    calls = calls + 1
  end subroutine outer
end module deep_m

program callsite_deep_f
  use deep_m
  implicit none
  integer :: ierr, i
  buf = 1
  call MPI_Init(ierr)
  do i = 1, 4
    call outer(8)
  end do
  call MPI_Finalize(ierr)
end program callsite_deep_f
