/* Settings: one table per part of the runtime (the profiler core and each
 * engine), one parser, one error format.
 *
 * A setting KEY is read from the environment variable MPILENS_<KEY> (upper
 * case), else from the line `KEY = value` of the config file named by
 * MPILENS_CONFIG, else it takes its default; the default is parsed like a
 * given value, so the table is the only place it is written.  Every value is
 * checked when it is read.  A bad one gives one line:
 *
 *   mpilens: MPILENS_KEY='value' is invalid: expected <accepted>
 *   mpilens: MPILENS_CONFIG='file': key='value' at line N is invalid: expected <accepted>
 *
 * (a setting that says why, such as an unknown function name, puts
 * "<why> (expected <accepted>)" after "is invalid: ").  The same tables
 * give docs/configuration.md and `mpilens config` (exported
 * mpilens_settings_json, runtime/core/config.c).  No MPI calls here. */
#ifndef MLENS_SETTINGS_H
#define MLENS_SETTINGS_H
#include <stdio.h>

#include "mlbuf.h"

enum {
    ML_SET_BOOL,    /* on/off, 1/0, yes/no, true/false (any case): int 1/0 */
    ML_SET_CHOICE,  /* one of choices (exact): int index into choices */
    ML_SET_INT,     /* decimal integer in [lo, hi]: int */
    ML_SET_REAL,    /* number in (lo, hi]: double */
    ML_SET_TEXT,    /* any non-empty text: const char * (NULL when unset) */
    ML_SET_FILE,    /* a readable regular file: const char * path */
    ML_SET_OUTFILE, /* a regular file, or a path where one will be created: const char * */
    ML_SET_FLAG,    /* set to anything (even empty) = 1, unset = 0: int */
    ML_SET_CUSTOM   /* parse() decides and stores */
};
#define ML_SET_POW2 1        /* INT: also a power of two */
#define ML_SET_ENV_ONLY 2    /* environment only: not a config-file key */
#define ML_SET_CONFIG 4      /* the config file itself (read before the others) */
#define ML_SET_NOT_READ 8    /* listed for the docs, read by mpilens-exec, not the library */
#define ML_SET_BARE 16       /* config-file lines without '=' are a list for this setting */

typedef struct ml_setting {
    const char *key;              /* file key, lower case; NULL ends a table */
    int type;
    const char *def;              /* default value; NULL: unset */
    const char *unset;            /* for the docs: what unset means (when def is NULL) */
    const char *accepted;         /* completes "expected ...": errors and docs */
    const char *help;             /* what it does: docs and `mpilens config` */
    const char *const *choices;   /* CHOICE: NULL-terminated */
    double lo, hi;                /* INT: [lo, hi]; REAL: (lo, hi] */
    int flags;
    /* CUSTOM: 0 ok; -1 bad, optionally saying why (else "expected <accepted>");
     * value NULL: back to unset (a setting without default) */
    int (*parse)(const char *value, void *out, ml_buf_t *why);
    void *out;                    /* where the value goes (type above) */
} ml_setting;

/* A part of the runtime and its settings (the core, an engine). */
typedef struct {
    const char *name;
    const ml_setting *table;
} ml_setting_part;

/* Reads every setting of the n parts, in order: environment, config file
 * (with_file: the ML_SET_CONFIG setting names it), default.  Unknown keys,
 * repeated keys and anything but a regular file are errors.  0 ok; -1 with
 * one line (no newline) in *err. */
int ml_settings_load(const ml_setting_part *parts, int n, int with_file, ml_buf_t *err);

/* One line about the value of key as it was given (environment or config
 * file, see above) followed by the formatted text, e.g.
 * ml_settings_fail(err, "tuning_file", "is corrupt: %s", why).  Returns -1. */
int ml_settings_fail(ml_buf_t *err, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The settings of the last load with their values and sources, as the JSON
 * members "config": path-or-null, "settings": [...] (`mpilens config`). */
void ml_settings_json(ml_buf_t *b);

/* Opens path for reading only if it is a regular file (a FIFO or a device is
 * never opened in a way that could block).  NULL with the reason in why
 * ("No such file or directory", "is a directory", ...). */
FILE *ml_open_regular(const char *path, ml_buf_t *why);

#endif
