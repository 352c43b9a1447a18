! Tells the C side where this MPI's Fortran sentinels live (MPI_IN_PLACE,
! MPI_BOTTOM, MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE are common-block
! variables whose *addresses* mark them).  Compiled with the MPI's own mpif.h,
! so the addresses are the ones the application's Fortran code passes.
subroutine mlf_sentinels()
  implicit none
  include 'mpif.h'
  external ml_set_fsentinels
  call ml_set_fsentinels(MPI_IN_PLACE, MPI_BOTTOM, MPI_STATUS_IGNORE, MPI_STATUSES_IGNORE)
end subroutine mlf_sentinels
