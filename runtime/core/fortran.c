/* Fortran support: sentinel addresses, registered at MPI_Init. */
#include "ml.h"

void *ml_f_in_place = NULL, *ml_f_bottom = NULL, *ml_f_status_ignore = NULL, *ml_f_statuses_ignore = NULL;

void mlf_sentinels_(void);
void ml_set_fsentinels_(void *in_place, void *bottom, void *st_ign, void *sts_ign);

void ml_set_fsentinels_(void *in_place, void *bottom, void *st_ign, void *sts_ign)
{
    ml_f_in_place = in_place;
    ml_f_bottom = bottom;
    ml_f_status_ignore = st_ign;
    ml_f_statuses_ignore = sts_ign;
}

void ml_fortran_init(void) { mlf_sentinels_(); }
