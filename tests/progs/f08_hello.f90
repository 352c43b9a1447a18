! An mpi_f08 program without ierror arguments (profiled with Open MPI; with MPICH mpilens says it sees nothing).
program t
  use mpi_f08
  implicit none
  integer :: r, n, i
  real(8) :: a(4), b(4)
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, r)
  call MPI_Comm_size(MPI_COMM_WORLD, n)
  a = r
  do i = 1, 3
    call MPI_Allreduce(a, b, 4, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  end do
  call MPI_Barrier(MPI_COMM_WORLD)
  call MPI_Finalize()
end program
