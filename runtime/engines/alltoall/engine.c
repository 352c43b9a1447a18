/* The adaptive Alltoall engine's interface to the core (ml_engine_alltoall):
 * its settings, the check of its input files, start-up (everybody follows
 * rank 0's settings) and MPI_Finalize (records gathered, tuning file). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alltoall.h"
#include "ml_schema.h" /* generated from schema/profile.json: the section's version */

ml_a2a_engine_t ml_a2a = {
    .cfg = {ML_A2A_MODE_NATIVE, 50, 1, 1000, 1, 1, 0.5, {0}, 1},
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .keyval = MPI_KEYVAL_INVALID,
    .cs_gen = 1,
};

/* ---------------- settings ---------------- */

/* What the settings table fills on every rank; rank 0's become ml_a2a.cfg. */
static struct {
    int mode, learn_n, model, check_every, reuse, share, provisional;
    double drift, race[ML_A2A_RACE_POINTS];
    const char *tuning_file, *machine, *network_model, *cache;
} set;

static const char *const off_on[] = {"off", "on", NULL};

static int parse_race(const char *v, void *out, ml_buf_t *why)
{
    (void)why;
    return ml_a2a_parse_race(v, out);
}

static const ml_setting settings[] = {
    {.key = "alltoall", .type = ML_SET_CHOICE, .def = "native", .choices = ml_a2a_modes,
     .out = &set.mode,
     .help = "MPI_Alltoall: the MPI's own (native), chosen per communicator and message size "
             "(adaptive), or one algorithm forced (docs/alltoall.md)"},
    {.key = "alltoall_learn", .type = ML_SET_INT, .def = "50", .lo = 1, .hi = 100000000,
     .out = &set.learn_n, .accepted = "an integer >= 1 and <= 100000000 (calls per candidate)",
     .help = "Learning: calls per candidate"},
    {.key = "alltoall_model", .type = ML_SET_CHOICE, .def = "on", .choices = off_on,
     .out = &set.model, .accepted = "on or off",
     .help = "Grouping prunes candidates by their P-LogP cost model; off learns all eight"},
    {.key = "alltoall_race", .type = ML_SET_CUSTOM, .def = ML_A2A_RACE_DEFAULT, .parse = parse_race,
     .out = set.race,
     .accepted = "off, a factor F, F1,F2 or F0,F1,F2, each in (1, 1000] (learning drops "
                 "candidates this many times slower than the best after one turn, N/5 and N/2 calls)",
     .help = "Learning's race: early elimination of clear losers"},
    {.key = "alltoall_check", .type = ML_SET_INT, .def = "1000", .lo = 0, .hi = 100000000,
     .out = &set.check_every,
     .accepted = "an integer >= 0 and <= 100000000 (calls between drift checks, 0 = never)",
     .help = "Running: calls between checks of the time per call against the learned one"},
    {.key = "alltoall_drift", .type = ML_SET_REAL, .def = "0.5", .lo = 0, .hi = 100,
     .out = &set.drift, .accepted = "a number in (0, 100] (relative change that triggers re-learning)",
     .help = "Running: relative change of the time per call that restarts Learning"},
    {.key = "alltoall_reuse", .type = ML_SET_CHOICE, .def = "on", .choices = off_on,
     .out = &set.reuse, .accepted = "on or off",
     .help = "a choice learned on one communicator serves later ones of the same size and "
             "ranks per node"},
    {.key = "alltoall_share", .type = ML_SET_CHOICE, .def = "on", .choices = off_on,
     .out = &set.share, .accepted = "on or off",
     .help = "communicators over the same processes share one private duplicate"},
    {.key = "alltoall_cache", .type = ML_SET_TEXT,
     .unset = "$XDG_CACHE_HOME/mpilens/tuning-<machine>.json (XDG_CACHE_HOME unset: ~/.cache)",
     .out = &set.cache, .accepted = "a file path, or off",
     .help = "adaptive mode: learning that spans runs (finished choices, partial learning, calls "
             "per run) is read at MPI_Init and merged in at MPI_Finalize; off: every run learns "
             "afresh (docs/alltoall.md)"},
    {.key = "alltoall_provisional", .type = ML_SET_CHOICE, .def = "on", .choices = off_on,
     .out = &set.provisional, .accepted = "on or off",
     .help = "a run not expected to finish learning (calls per run of earlier runs, from the "
             "cache) learns for half its calls, then runs the best candidate measured so far"},
    {.key = "tuning_file", .type = ML_SET_OUTFILE, .unset = "none", .out = &set.tuning_file,
     .accepted = "a tuning file written by `mpilens tune`, or a path where one will be written",
     .help = "learned choices: read at MPI_Init (adaptive mode), new ones written at MPI_Finalize"},
    {.key = "machine", .type = ML_SET_TEXT, .unset = "host name stem | CPU model | cores | MPI library",
     .out = &set.machine, .accepted = "a non-empty text (tabs and '|' become spaces)",
     .help = "the machine signature that keys the tuning file"},
    {.key = "network_model", .type = ML_SET_FILE, .unset = "Grouping measures P-LogP itself",
     .out = &set.network_model, .accepted = "a network model file written by `mpilens bench logp --model FILE`",
     .help = "Grouping predicts from these P-LogP parameters instead of measuring them"},
    {0}};

int ml_a2a_parse_race(const char *v, double race[ML_A2A_RACE_POINTS])
{
    double r[ML_A2A_RACE_POINTS];
    int n = 0;
    if (strcmp(v, "off") == 0) {
        for (int j = 0; j < ML_A2A_RACE_POINTS; j++)
            race[j] = 0;
        return 0;
    }
    for (const char *p = v;; p++) {
        char *end;
        if (n == ML_A2A_RACE_POINTS)
            return -1;
        r[n] = strtod(p, &end);
        if (end == p || !(r[n] > 1 && r[n] <= 1000))
            return -1;
        n++;
        p = end;
        if (*p == 0)
            break;
        if (*p != ',')
            return -1;
    }
    if (n == 1) /* F: every point */
        for (int j = 0; j < ML_A2A_RACE_POINTS; j++)
            race[j] = r[0];
    else if (n == 2) { /* F1,F2: N/5 and N/2 only */
        race[0] = 0;
        race[1] = r[0];
        race[2] = r[1];
    } else
        for (int j = 0; j < ML_A2A_RACE_POINTS; j++)
            race[j] = r[j];
    return 0;
}

void ml_a2a_set_config(int mode, int learn_n, int model, int check_every, double drift,
                       const double race[ML_A2A_RACE_POINTS])
{
    for (int j = 0; j < ML_A2A_RACE_POINTS; j++)
        ml_a2a.cfg.race[j] = race[j];
    ml_a2a.cfg.mode = mode;
    ml_a2a.cfg.learn_n = learn_n > 0 ? learn_n : 1;
    ml_a2a.cfg.model = model;
    ml_a2a.cfg.check_every = check_every;
    ml_a2a.cfg.drift = drift;
}

/* ---------------- check (rank 0, no communication) ---------------- */

/* The files adaptive mode reads: the tuning file (missing: none yet) and the
 * network model, which must come from this MPI. */
static int check(ml_buf_t *err)
{
    char why[512] = "";
    int adaptive = set.mode - 2 == ML_A2A_MODE_ADAPTIVE;
    if (adaptive && set.tuning_file) {
        if (!ml_a2a.tune_tab && !(ml_a2a.tune_tab = calloc(ML_TUNE_MAX, sizeof *ml_a2a.tune_tab)))
            return ml_settings_fail(err, "tuning_file", "cannot be read: out of memory");
        if (ml_tune_parse(set.tuning_file, ml_a2a.tune_tab, ML_TUNE_MAX, &ml_a2a.tune_n, why,
                          sizeof why) == -2)
            return ml_settings_fail(err, "tuning_file", "is corrupt: %s (regenerate it with "
                                    "`mpilens tune` or remove it)", why);
    }
    ml_a2a.netmodel = NULL;
    if (adaptive && set.model && set.network_model) {
        if (ml_netmodel_load(set.network_model, &ml_a2a.nm_store, why, sizeof why) != 0)
            return ml_settings_fail(err, "network_model", "%s", why);
        char lib[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        PMPI_Get_library_version(lib, &len);
        lib[strcspn(lib, "\n")] = 0;
        if (strcmp(lib, ml_a2a.nm_store.mpi_library) != 0)
            return ml_settings_fail(err, "network_model", "was measured with '%.80s', this job runs "
                                    "'%.80s' (measure it again with `mpilens bench logp --model FILE` "
                                    "under this MPI)", ml_a2a.nm_store.mpi_library, lib);
        ml_a2a.netmodel = &ml_a2a.nm_store;
    }
    return 0;
}

/* ---------------- init (collective) ---------------- */

static int init(void)
{
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    /* everybody follows rank 0's settings and the files it read */
    ml_a2a_cfg c = {set.mode - 2, set.learn_n, set.model, set.check_every, set.reuse, set.share,
                    set.drift, {set.race[0], set.race[1], set.race[2]}, set.provisional};
    PMPI_Bcast(&c, (int)sizeof c, MPI_BYTE, 0, MPI_COMM_WORLD);
    ml_a2a.cfg = c;
    ml_a2a.tune_path = set.tuning_file;
    if (c.mode != ML_A2A_MODE_NATIVE)
        ml_a2a_nodes_init();
    if (rank == 0)
        ml_machine_signature(ml_a2a.machine, sizeof ml_a2a.machine, set.machine);
    PMPI_Bcast(ml_a2a.machine, (int)sizeof ml_a2a.machine, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (c.mode == ML_A2A_MODE_ADAPTIVE && ml_a2a_cache_init(set.cache) != 0)
        return 1;
    int model = ml_a2a.netmodel != NULL;
    PMPI_Bcast(&model, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (model) {
        PMPI_Bcast(&ml_a2a.nm_store, (int)sizeof ml_a2a.nm_store, MPI_BYTE, 0, MPI_COMM_WORLD);
        ml_a2a.netmodel = &ml_a2a.nm_store;
    }
    int tuned = c.mode == ML_A2A_MODE_ADAPTIVE && set.tuning_file;
    PMPI_Bcast(&tuned, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (tuned) {
        PMPI_Bcast(&ml_a2a.tune_n, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (!ml_a2a.tune_tab && !(ml_a2a.tune_tab = calloc(ML_TUNE_MAX, sizeof *ml_a2a.tune_tab)))
            return 1;
        if (ml_a2a.tune_n > 0)
            PMPI_Bcast(ml_a2a.tune_tab, (int)(ml_a2a.tune_n * sizeof *ml_a2a.tune_tab), MPI_BYTE, 0,
                       MPI_COMM_WORLD);
        ml_a2a.tune_loaded = 1;
    }
    return 0;
}

/* ---------------- finalize (collective) ---------------- */

static void finalize(void)
{
    int rank;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (ml_a2a.cfg.mode == ML_A2A_MODE_NATIVE) { /* rank 0's mode on every rank (init): no */
        ml_a2a_free_scratch();                   /* decisions, no cache, no section: no gathers */
        return;
    }
    ml_a2a_drain_states();
    ml_a2a_gather_records();
    if (rank == 0 && ml_a2a.tune_loaded && ml_a2a.tune_path)
        ml_tune_save();
    ml_a2a_cache_finalize();
    ml_a2a_free_scratch();
}

const ml_engine_t ml_engine_alltoall = {
    .name = "alltoall",
    .version = ML_SECTION_VERSION_ALLTOALL,
    .settings = settings,
    .check = check,
    .init = init,
    .finalize = finalize,
    .section = ml_a2a_section,
};
