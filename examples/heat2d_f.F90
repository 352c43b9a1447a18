! heat2d_f: the Fortran twin of heat2d.c (same problem, same MPI calls, same checks).
!
!   u_t = u_xx + u_yy on the periodic unit square, u(x,y,0) = sin(2 pi x) sin(4 pi y),
!   N x N grid, dt = 0.2 h^2, 5-point stencil.  Columns are split in blocks over
!   the ranks (Fortran is column-major, so a halo is one contiguous column).
!
! Per rank, for STEPS steps and a transpose every EVERY steps:
!   MPI_BCAST 1 (3 integers), MPI_IRECV 2*STEPS, MPI_ISEND 2*STEPS (N doubles each),
!   MPI_WAITALL STEPS, MPI_ALLREDUCE STEPS+1, MPI_ALLTOALL STEPS/EVERY.
! Exit status 1 when the field (discrete exact solution to 1e-12, continuous one to
! 20 h^2), the global sum of u^2 or a transpose is wrong.
!
! Usage: heat2d_f [N [STEPS [EVERY [WRONG]]]]   (defaults 64 100 25 0)
! Built with `use mpi`, or with mpif.h (-DMPIF_H) where the compiler cannot read
! the MPI's module (Intel MPI's mpi.mod is for ifx, not gfortran).
! WRONG=1 adds 1e-6 to one grid value on rank 0: the checks must then fail.
program heat2d_f
#ifdef MPIF_H
  implicit none
  include 'mpif.h'
#else
  use mpi
  implicit none
#endif
  integer, parameter :: dp = kind(1.0d0)
  integer, parameter :: kx = 1, ky = 2
  real(dp), parameter :: r = 0.2_dp
  integer :: ierr, rank, nprocs, params(3), n, steps, every, cols, col0
  integer :: left, right, step, i, j, b, s, jj, a, nargs, wrong
  integer :: req(4), stats(MPI_STATUS_SIZE, 4)
  real(dp), allocatable :: u(:,:), v(:,:), sbuf(:), rbuf(:)
  real(dp) :: pi, h, dt, g, lap, loc(1), glob(1), expect, got, want
  real(dp) :: mine(2), allv(2), decay, e, c
  logical :: bad, ok
  character(len=32) :: arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  params = (/ 64, 100, 25 /)
  if (rank == 0) then
    nargs = command_argument_count()
    do a = 1, min(nargs, 3)
      call get_command_argument(a, arg)
      read (arg, *) params(a)
    end do
  end if
  call MPI_BCAST(params, 3, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)
  n = params(1); steps = params(2); every = params(3)
  if (n <= 0 .or. steps < 0 .or. every <= 0 .or. mod(n, nprocs) /= 0) then
    if (rank == 0) write (0, '(a)') 'heat2d_f: N must be a positive multiple of the ranks'
    call MPI_FINALIZE(ierr)
    stop 2
  end if

  pi = acos(-1.0_dp); h = 1.0_dp / n; dt = r * h * h
  g = 1.0_dp - 4.0_dp * r * (sin(pi * kx * h)**2 + sin(pi * ky * h)**2)
  cols = n / nprocs; col0 = rank * cols
  left = mod(rank + nprocs - 1, nprocs); right = mod(rank + 1, nprocs)
  ! u(i, j): i = x index 0..n-1 (rows), j = local column 0..cols+1 (halo 0 and cols+1)
  allocate (u(0:n-1, 0:cols+1), v(0:n-1, 0:cols+1), sbuf(cols*cols*nprocs), rbuf(cols*cols*nprocs))
  do j = 1, cols
    do i = 0, n - 1
      u(i, j) = exact(0, i, col0 + j - 1)
    end do
  end do

  wrong = 0
  if (rank == 0 .and. command_argument_count() >= 4) then
    call get_command_argument(4, arg)
    read (arg, *) wrong
  end if
  if (wrong /= 0) u(0, 1) = u(0, 1) + 1.0e-6_dp   ! deliberately wrong answer
  bad = .false.
  do step = 1, steps
    call MPI_IRECV(u(0, 0), n, MPI_DOUBLE_PRECISION, left, 0, MPI_COMM_WORLD, req(1), ierr)
    call MPI_IRECV(u(0, cols+1), n, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, req(2), ierr)
    call MPI_ISEND(u(0, 1), n, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, req(3), ierr)
    call MPI_ISEND(u(0, cols), n, MPI_DOUBLE_PRECISION, right, 0, MPI_COMM_WORLD, req(4), ierr)
    call MPI_WAITALL(4, req, stats, ierr)
    loc(1) = 0.0_dp
    do j = 1, cols
      do i = 0, n - 1
        lap = u(mod(i + n - 1, n), j) + u(mod(i + 1, n), j) + u(i, j - 1) + u(i, j + 1) &
              - 4.0_dp * u(i, j)
        v(i, j) = u(i, j) + r * lap
        loc(1) = loc(1) + v(i, j)**2
      end do
    end do
    u(:, 1:cols) = v(:, 1:cols)
    call MPI_ALLREDUCE(loc, glob, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
    expect = g**(2 * step) * real(n, dp)**2 / 4.0_dp
    if (abs(glob(1) - expect) > 1.0e-10_dp * expect) bad = .true.

    if (mod(step, every) == 0) then
      ! block b (to rank b): rows b*cols .. b*cols+cols-1 of my columns, packed column-major
      do b = 0, nprocs - 1
        do jj = 0, cols - 1          ! my column
          do i = 0, cols - 1         ! row within block b
            sbuf(b*cols*cols + i*cols + jj + 1) = u(b*cols + i, jj + 1)
          end do
        end do
      end do
      call MPI_ALLTOALL(sbuf, cols*cols, MPI_DOUBLE_PRECISION, rbuf, cols*cols, &
                        MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
      ! from rank s: T(x = s*cols+jj, y = col0+i) = u(x = col0+i, y = s*cols+jj)
      do s = 0, nprocs - 1
        do i = 0, cols - 1
          do jj = 0, cols - 1
            got = rbuf(s*cols*cols + i*cols + jj + 1)
            want = exact(step, col0 + i, s*cols + jj)
            if (abs(got - want) > 1.0e-12_dp) bad = .true.
          end do
        end do
      end do
    end if
  end do

  decay = exp(-4.0_dp * pi**2 * (kx**2 + ky**2) * steps * dt)
  mine = 0.0_dp
  do j = 1, cols
    do i = 0, n - 1
      e = abs(u(i, j) - exact(steps, i, col0 + j - 1))
      mine(1) = max(mine(1), e)
      c = decay * sin(2 * pi * kx * i * h) * sin(2 * pi * ky * (col0 + j - 1) * h)
      mine(2) = max(mine(2), abs(u(i, j) - c))
    end do
  end do
  if (bad) mine(2) = 1.0e300_dp
  call MPI_ALLREDUCE(mine, allv, 2, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  ok = allv(1) < 1.0e-12_dp .and. allv(2) < 20.0_dp * h * h
  if (rank == 0) then
    if (ok) then
      write (*, '(a,i0,a,i0,a,i0,a,i0,a,es9.2,a,es9.2,a)') 'heat2d_f: N=', n, ' ranks=', nprocs, &
        ' steps=', steps, ' transposes=', steps / every, ' max|u-exact|=', allv(1), &
        ' max|u-continuous|=', allv(2), ' OK'
    else
      write (*, '(a)') 'heat2d_f: FAILED'
    end if
  end if
  deallocate (u, v, sbuf, rbuf)
  call MPI_FINALIZE(ierr)
  if (.not. ok) stop 1

contains

  ! discrete exact solution at step k, grid point (i, j) = (x index, y index)
  real(dp) function exact(k, i, j)
    integer, intent(in) :: k, i, j
    exact = g**k * sin(2 * pi * kx * i * h) * sin(2 * pi * ky * j * h)
  end function exact

end program heat2d_f
