! Fortran twin of err_return.c: the same calls, failing the same way under
! MPI_ERRORS_RETURN; prints "errors=<failed calls> of 6".  Built with `use mpi`,
! or with include 'mpif.h' (-DMPIF_H) where the module cannot be used.
program err_return_f
#ifndef MPIF_H
  use mpi
#endif
  implicit none
#ifdef MPIF_H
  include 'mpif.h'
#endif
  integer :: r, P, ierr, i, bad, rq
  integer :: buf(10), inb(10), st(MPI_STATUS_SIZE)
  double precision :: d(8)
  buf = 0
  d = 0
  bad = 0
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, r, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, P, ierr)
  call MPI_COMM_SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN, ierr)
  do i = 1, 3
    call MPI_SEND(buf, 10, MPI_INTEGER, P + 5, 1, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
  end do
  call MPI_ISEND(buf, 10, MPI_INTEGER, P + 5, 1, MPI_COMM_WORLD, rq, ierr)
  if (ierr /= MPI_SUCCESS) bad = bad + 1
  do i = 1, 2
    call MPI_BCAST(d, 8, MPI_DOUBLE_PRECISION, P + 1, MPI_COMM_WORLD, ierr)
    if (ierr /= MPI_SUCCESS) bad = bad + 1
  end do
  call MPI_SENDRECV(buf, 10, MPI_INTEGER, mod(r + 1, P), 2, inb, 10, MPI_INTEGER, &
                    mod(r + P - 1, P), 2, MPI_COMM_WORLD, st, ierr)
  if (r == 0) then
    if (ierr == MPI_SUCCESS) then
      print '(a,i0,a)', 'errors=', bad, ' of 6 sendrecv=ok'
    else
      print '(a,i0,a)', 'errors=', bad, ' of 6 sendrecv=failed'
    end if
  end if
  call MPI_FINALIZE(ierr)
end program err_return_f
