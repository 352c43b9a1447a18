! Fortran twin of prof_c.c: makes exactly the same MPI calls with the same
! sizes, so tests/profmodel.py describes both.  Built twice: prof_f with
! `use mpi`, prof_fh with `include 'mpif.h'` (-DMPIF_H), prof_f08 with `use mpi_f08`
! (-DF08: handles and statuses are derived types, some calls omit the optional
! ierror).  Argument 1: scratch file.
program prof_f
#if defined(F08)
  use mpi_f08
#elif !defined(MPIF_H)
  use mpi
#endif
  implicit none
#ifdef MPIF_H
  include 'mpif.h'
#endif
  integer :: r, P, right, left, ierr, i, k, n, o, sr, sp
#ifdef F08
  type(MPI_Comm) :: sub, dup
  type(MPI_Win) :: win
  type(MPI_File) :: fh
  type(MPI_Request) :: cr, rq(2)
  type(MPI_Status) :: st, sts(2)
#define SOURCE_OF(s) s%MPI_SOURCE
#else
  integer :: sub, dup, win, fh, cr
  integer :: st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2), rq(2)
#define SOURCE_OF(s) s(MPI_SOURCE)
#endif
  integer(kind=1) :: sb(70000), rb(70000)
  integer :: sizes(8) = (/ 0, 1, 3, 8, 100, 1000, 5000, 70000 /)
  double precision :: d16(16), d3(3), d3r(3), one, total, sc, scr, d5(5), wbuf(10), d5p(5), d2g(2)
  integer :: i4s(4), i4r(4), i2s(2), i2r(2), p10s(10), p10r(10), i3(3), i3r(3), i10(10), ip4(4), g2(2)
  integer :: gv(64), s3(3), ex, exr, ia2(2), ia2r(2)
  integer, allocatable :: big(:), cnt(:), dsp(:), cnt2(:), a2s(:), a2r(:)
  double precision, allocatable :: rsb(:)
  double precision :: rsr(2)
  integer(kind=MPI_ADDRESS_KIND) :: wsize, disp
  integer(kind=MPI_OFFSET_KIND) :: off
  character(len=256) :: fname
  character(len=100) :: io, back

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, r, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, P, ierr)
  call get_command_argument(1, fname)
  right = mod(r + 1, P)
  left = mod(r - 1 + P, P)
  sb = int(r, 1)

  ! 1. blocking ring
  do i = 1, 8
    call MPI_Sendrecv(sb, sizes(i), MPI_BYTE, right, 1, rb, sizes(i), MPI_BYTE, left, 1, &
                      MPI_COMM_WORLD, st, ierr)
    if (sizes(i) > 0) call check(rb(1) == int(left, 1), 'sendrecv data')
  end do
  ! 2. pairs, MPI_ANY_SOURCE
  do i = 1, 16
    d16(i) = r + i - 1
  end do
  do k = 0, 2
    if (mod(r, 2) == 0 .and. r + 1 < P) call MPI_Send(d16, 16, MPI_DOUBLE_PRECISION, r + 1, 2, MPI_COMM_WORLD, ierr)
    if (mod(r, 2) == 1) then
      if (k == 0) then
        call MPI_Recv(d16, 16, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, st, ierr)
      else
        call MPI_Recv(d16, 16, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      end if
      call check(d16(1) == r - 1, 'pair data')
    end if
  end do
  ! 3. non-blocking ring
  i4s = r
  do k = 1, 2
    call MPI_Irecv(i4r, 4, MPI_INTEGER, left, 3, MPI_COMM_WORLD, rq(1), ierr)
    call MPI_Isend(i4s, 4, MPI_INTEGER, right, 3, MPI_COMM_WORLD, rq(2), ierr)
    call MPI_Waitall(2, rq, MPI_STATUSES_IGNORE, ierr)
    call check(i4r(4) == left, 'isend data')
  end do
  i2s = r
  call MPI_Irecv(i2r, 2, MPI_INTEGER, MPI_ANY_SOURCE, 4, MPI_COMM_WORLD, rq(1), ierr)
  call MPI_Send(i2s, 2, MPI_INTEGER, right, 4, MPI_COMM_WORLD, ierr)
  call MPI_Wait(rq(1), st, ierr)
  call check(SOURCE_OF(st) == left .and. i2r(2) == left, 'irecv any source')
  ! 4. persistent ring
  p10s = r
  call MPI_Send_init(p10s, 10, MPI_INTEGER, right, 5, MPI_COMM_WORLD, rq(2), ierr)
  call MPI_Recv_init(p10r, 10, MPI_INTEGER, left, 5, MPI_COMM_WORLD, rq(1), ierr)
  do k = 1, 3
    call MPI_Startall(2, rq, ierr)
    call MPI_Waitall(2, rq, sts, ierr)
    call check(p10r(10) == left, 'persistent data')
  end do
  call MPI_Request_free(rq(1), ierr)
  call MPI_Request_free(rq(2), ierr)
  ! 5. probe
  i3 = r
  call MPI_Isend(i3, 3, MPI_INTEGER, right, 6, MPI_COMM_WORLD, rq(2), ierr)
  call MPI_Probe(left, 6, MPI_COMM_WORLD, st, ierr)
  call MPI_Get_count(st, MPI_INTEGER, n, ierr)
  call check(n == 3, 'probe count')
  call MPI_Recv(i3r, n, MPI_INTEGER, left, 6, MPI_COMM_WORLD, st, ierr)
  call MPI_Wait(rq(2), MPI_STATUS_IGNORE, ierr)
  ! 6. collectives
  i10 = -1
  if (r == 0) i10 = 7
  call MPI_Bcast(i10, 10, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(i10(10) == 7, 'bcast')
  d3 = (/ 1d0, 2d0, 3d0 /)
  call MPI_Reduce(d3, d3r, 3, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (r == 0) call check(d3r(3) == 3d0 * P, 'reduce')
  one = 1d0
  call MPI_Allreduce(one, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(total == P, 'allreduce')
  ip4 = 1
  call MPI_Allreduce(MPI_IN_PLACE, ip4, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(ip4(4) == P, 'allreduce in place')
  allocate(big(P * (P + 1) + 64), cnt(P), dsp(P), cnt2(P), a2s(2 * P), a2r(2 * P), rsb(2 * P))
  big = 0
  g2 = r
  call MPI_Gather(g2, 2, MPI_INTEGER, big, 2, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  gv = r
  o = 0
  do i = 1, P
    cnt(i) = i
    dsp(i) = o
    o = o + i
  end do
  call MPI_Gatherv(gv, r + 1, MPI_INTEGER, big, cnt, dsp, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  if (r == 0) call check(big(dsp(P) + 1) == P - 1, 'gatherv')
  if (r == 0) then
    do i = 1, 3 * P
      big(i) = (i - 1) / 3
    end do
  end if
  call MPI_Scatter(big, 3, MPI_INTEGER, s3, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  call check(s3(3) == r, 'scatter')
  call MPI_Allgather(r, 1, MPI_INTEGER, big, 1, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(big(P) == P - 1, 'allgather')
  do i = 1, P
    cnt(i) = 2
    dsp(i) = 2 * (i - 1)
  end do
  big(2 * r + 1) = r
  big(2 * r + 2) = r
  call MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, big, cnt, dsp, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(big(2 * P) == P - 1, 'allgatherv in place')
  a2s = r
  call MPI_Alltoall(a2s, 2, MPI_INTEGER, a2r, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(a2r(2 * P) == P - 1, 'alltoall')
  do i = 1, P
    cnt(i) = 1
    cnt2(i) = 1
    dsp(i) = i - 1
  end do
  call MPI_Alltoallv(a2s, cnt, dsp, MPI_INTEGER, a2r, cnt2, dsp, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check(a2r(P) == P - 1, 'alltoallv')
  rsb = 1d0
  call MPI_Reduce_scatter_block(rsb, rsr, 2, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(rsr(2) == P, 'reduce_scatter_block')
  sc = 1d0
  call MPI_Scan(sc, scr, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check(scr == r + 1, 'scan')
  ex = 1
  call MPI_Exscan(ex, exr, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (r > 0) call check(exr == r, 'exscan')
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
#ifdef F08
  call MPI_Barrier(MPI_COMM_WORLD)
#else
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
#endif
  d5 = 0d0
  if (r == 0) d5(1) = 5d0
  call MPI_Ibcast(d5, 5, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, cr, ierr)
  call MPI_Wait(cr, MPI_STATUS_IGNORE, ierr)
  call check(d5(1) == 5d0, 'ibcast')
  ia2 = (/ 1, 2 /)
  call MPI_Iallreduce(ia2, ia2r, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, cr, ierr)
#ifdef F08
  call MPI_Wait(cr, MPI_STATUS_IGNORE)
#else
  call MPI_Wait(cr, MPI_STATUS_IGNORE, ierr)
#endif
  call check(ia2r(2) == 2 * P, 'iallreduce')
  ! 7. communicators
  call MPI_Comm_split(MPI_COMM_WORLD, mod(r, 2), -r, sub, ierr)
  call MPI_Comm_rank(sub, sr, ierr)
  call MPI_Comm_size(sub, sp, ierr)
  call MPI_Sendrecv(sb, 64, MPI_BYTE, mod(sr + 1, sp), 8, rb, 64, MPI_BYTE, mod(sr - 1 + sp, sp), 8, sub, st, ierr)
  call MPI_Comm_dup(sub, dup, ierr)
  call MPI_Barrier(dup, ierr)
  call MPI_Comm_free(dup, ierr)
  call MPI_Comm_free(sub, ierr)
  ! 8. one-sided
  wbuf = 0d0
  d5p = (/ 1d0, 2d0, 3d0, 4d0, 5d0 /)
  wsize = 80
  call MPI_Win_create(wbuf, wsize, 8, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  disp = 0
  call MPI_Put(d5p, 5, MPI_DOUBLE_PRECISION, right, disp, 5, MPI_DOUBLE_PRECISION, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  disp = 3
  call MPI_Get(d2g, 2, MPI_DOUBLE_PRECISION, left, disp, 2, MPI_DOUBLE_PRECISION, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  call check(d2g(1) == 4d0 .and. d2g(2) == 5d0, 'rma')
  call MPI_Win_free(win, ierr)
  ! 9. MPI-IO
  io = repeat(achar(iachar('a') + mod(r, 26)), 100)
  call MPI_File_open(MPI_COMM_WORLD, trim(fname), MPI_MODE_CREATE + MPI_MODE_RDWR, MPI_INFO_NULL, fh, ierr)
  off = r * 100
  call MPI_File_write_at(fh, off, io, 100, MPI_CHARACTER, st, ierr)
  call MPI_File_read_at(fh, off, back, 100, MPI_CHARACTER, st, ierr)
  call check(io == back, 'file data')
  call MPI_File_close(fh, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  if (r == 0) call MPI_File_delete(trim(fname), MPI_INFO_NULL, ierr)
  call MPI_Finalize(ierr)

contains

  subroutine check(ok, what)
    logical, intent(in) :: ok
    character(len=*), intent(in) :: what
    integer :: e
    if (.not. ok) then
      write (0, *) 'prof_f: check failed: ', what
      call MPI_Abort(MPI_COMM_WORLD, 3, e)
    end if
  end subroutine check
end program prof_f
