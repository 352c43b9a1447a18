! Fortran twin of region_c.c (tests/test_regions.py): the same calls, regions opened
! with mpilens_region_begin/end (runtime/include/mpilens_regions_f.c, linked in),
! recording switched off and on with MPI_PCONTROL(0) / MPI_PCONTROL(1).
program region_f
#if !defined(MPIF_H)
  use mpi
#endif
  implicit none
#ifdef MPIF_H
  include 'mpif.h'
#endif
  integer :: ierr, i
  integer :: a(4), b(16)
  a = 0
  b = 0
  call MPI_Init(ierr)
  call mpilens_region_begin('outer')
  do i = 1, 3
    call MPI_Allreduce(MPI_IN_PLACE, a, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  call mpilens_region_begin('inner')
  do i = 1, 5
    call MPI_Bcast(b, 16, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  end do
  call mpilens_region_begin('deep')
  do i = 1, 2
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end do
  call mpilens_region_end('deep')
  call mpilens_region_end('inner')
  call MPI_Allreduce(MPI_IN_PLACE, a, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call mpilens_region_end('outer')
  call mpilens_region_begin('inner')
  do i = 1, 2
    call MPI_Allreduce(MPI_IN_PLACE, a, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  call mpilens_region_end('inner')
  call MPI_Pcontrol(0)
  do i = 1, 4
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end do
  call MPI_Pcontrol(1)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Finalize(ierr)
end program region_f
