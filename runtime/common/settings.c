/* Settings: one parser and one error format for every table (settings.h). */
#define _GNU_SOURCE
#include "settings.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

enum { SRC_DEFAULT, SRC_ENV, SRC_FILE };
static const char *const src_names[] = {"default", "env", "file"};
static const char *const type_names[] = {"bool", "choice", "int", "real", "text",
                                         "file", "outfile", "flag", "custom"};

/* The last load: one slot per setting, in table order. */
typedef struct {
    const ml_setting *s;
    const char *part;
    const char *accepted; /* s->accepted, or "one of <choices>" made from the table */
    const char *value;   /* as given (environment or file), else the default; NULL: unset */
    int src, line;       /* where value came from; line: in the config file */
    int file_line;       /* the config file's line for this key, 0 if none (the environment
                            may still win) */
} slot_t;
static slot_t *slots;
static int nslots;
static const char *config_path; /* the config file read, NULL if none */

static void env_name(char *buf, size_t n, const char *key)
{
    snprintf(buf, n, "MPILENS_%s", key);
    for (char *p = buf; *p; p++)
        *p = (char)toupper((unsigned char)*p);
}

static slot_t *find(const char *key, int file_keys_only)
{
    for (int i = 0; i < nslots; i++)
        if (strcasecmp(slots[i].s->key, key) == 0 &&
            !(file_keys_only && (slots[i].s->flags & (ML_SET_ENV_ONLY | ML_SET_NOT_READ))))
            return &slots[i];
    return NULL;
}

static void where(ml_buf_t *err, const slot_t *sl, const char *key)
{
    char env[128];
    env_name(env, sizeof env, key);
    ml_buf_printf(err, "mpilens: ");
    if (sl && sl->src == SRC_FILE) {
        ml_buf_printf(err, "MPILENS_CONFIG='%s': %s='%s' at line %d ", config_path, sl->s->key,
                      sl->value, sl->line);
    } else if (sl && sl->src == SRC_DEFAULT) {
        ml_buf_printf(err, "%s (default '%s') ", env, sl->value ? sl->value : "");
    } else {
        ml_buf_printf(err, "%s='%s' ", env, sl && sl->value ? sl->value : "");
    }
}

int ml_settings_fail(ml_buf_t *err, const char *key, const char *fmt, ...)
{
    where(err, find(key, 0), key);
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0)
        text = NULL;
    va_end(ap);
    ml_buf_printf(err, "%s", text ? text : "");
    free(text);
    return -1;
}

FILE *ml_open_regular(const char *path, ml_buf_t *why)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        ml_buf_printf(why, "%s", strerror(errno));
        return NULL;
    }
    struct stat st;
    const char *not = NULL;
    if (fstat(fd, &st) != 0)
        not = strerror(errno);
    else if (S_ISDIR(st.st_mode))
        not = "it is a directory";
    else if (S_ISFIFO(st.st_mode))
        not = "it is a FIFO, not a regular file";
    else if (S_ISSOCK(st.st_mode))
        not = "it is a socket, not a regular file";
    else if (!S_ISREG(st.st_mode))
        not = "it is a device, not a regular file";
    FILE *f = NULL;
    if (!not) {
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        if (!(f = fdopen(fd, "r")))
            not = strerror(errno);
    }
    if (not) {
        ml_buf_printf(why, "%s", not);
        close(fd);
    }
    return f;
}

/* ---- values ---- */

static int parse_bool(const char *v, int *out)
{
    static const char *const yes[] = {"on", "1", "yes", "true"}, *const no[] = {"off", "0", "no", "false"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0)
            return *out = 1, 0;
        if (strcasecmp(v, no[i]) == 0)
            return *out = 0, 0;
    }
    return -1;
}

static int parse_value_trimmed(const ml_setting *s, const char *v, ml_buf_t *why);

/* 0 ok; -1 bad (why may say more).  v is never NULL.  Blanks around a number,
 * a boolean or a choice are ignored (" 2" and "2 " are 2); paths, names and
 * lists keep theirs. */
static int parse_value(const ml_setting *s, const char *v, ml_buf_t *why)
{
    if (s->type != ML_SET_BOOL && s->type != ML_SET_CHOICE && s->type != ML_SET_INT && s->type != ML_SET_REAL)
        return parse_value_trimmed(s, v, why);
    while (isspace((unsigned char)*v))
        v++;
    size_t n = strlen(v);
    while (n && isspace((unsigned char)v[n - 1]))
        n--;
    char *t = strndup(v, n);
    int rc = t ? parse_value_trimmed(s, t, why) : -1;
    free(t); /* numbers, booleans and choices keep no pointer to their text */
    return rc;
}

static int parse_value_trimmed(const ml_setting *s, const char *v, ml_buf_t *why)
{
    char *end;
    if (s->type == ML_SET_FLAG)
        return *(int *)s->out = 1, 0;
    if (!*v)
        return -1; /* empty: never a value (unset the variable instead) */
    switch (s->type) {
    case ML_SET_BOOL:
        return parse_bool(v, s->out);
    case ML_SET_CHOICE:
        for (int i = 0; s->choices[i]; i++)
            if (strcmp(v, s->choices[i]) == 0)
                return *(int *)s->out = i, 0;
        return -1;
    case ML_SET_INT: {
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (errno || end == v || *end || x < s->lo || x > s->hi || ((s->flags & ML_SET_POW2) && (x & (x - 1))))
            return -1;
        *(int *)s->out = (int)x;
        return 0;
    }
    case ML_SET_REAL: {
        double x = strtod(v, &end);
        if (end == v || *end || !(x > s->lo && x <= s->hi))
            return -1;
        *(double *)s->out = x;
        return 0;
    }
    case ML_SET_FILE: {
        FILE *f = ml_open_regular(v, why);
        if (!f)
            return -1;
        fclose(f);
        break;
    }
    case ML_SET_OUTFILE: {
        struct stat st;
        if (stat(v, &st) == 0 && !S_ISREG(st.st_mode)) {
            ml_buf_printf(why, S_ISDIR(st.st_mode) ? "it is a directory" : "it is not a regular file");
            return -1;
        }
        break;
    }
    case ML_SET_CUSTOM:
        return s->parse(v, s->out, why);
    }
    *(const char **)s->out = v; /* TEXT, FILE, OUTFILE */
    return 0;
}

/* Parses the slot's value into its setting (the default first: every load
 * starts from the defaults).  0 ok, -1 with the line in err. */
static int apply(slot_t *sl, ml_buf_t *err)
{
    const ml_setting *s = sl->s;
    if (s->flags & ML_SET_NOT_READ)
        return 0;
    ml_buf_t why = {0};
    if (s->type == ML_SET_FLAG)
        *(int *)s->out = 0;
    else if (s->type == ML_SET_TEXT || s->type == ML_SET_FILE || s->type == ML_SET_OUTFILE)
        *(const char **)s->out = NULL;
    else if (s->type == ML_SET_CUSTOM && !s->def)
        s->parse(NULL, s->out, &why); /* back to unset */
    if (s->def && parse_value(s, s->def, &why) != 0) {
        ml_settings_fail(err, s->key, "is an invalid default (internal error)");
        ml_buf_free(&why);
        return -1;
    }
    int rc = 0;
    if (sl->src != SRC_DEFAULT && parse_value(s, sl->value, &why) != 0) {
        if (why.n)
            ml_settings_fail(err, s->key, "is invalid: %s (expected %s)", why.p, sl->accepted);
        else
            ml_settings_fail(err, s->key, "is invalid: expected %s", sl->accepted);
        rc = -1;
    }
    ml_buf_free(&why);
    return rc;
}

/* What a value must be: the table's text, or for a choice without one
 * "one of a, b, c" from its choices (kept for the process's life). */
static const char *accepted_text(const ml_setting *s)
{
    if (s->accepted || s->type != ML_SET_CHOICE)
        return s->accepted ? s->accepted : "";
    ml_buf_t b = {0};
    ml_buf_printf(&b, "one of ");
    for (int i = 0; s->choices[i]; i++)
        ml_buf_printf(&b, "%s%s", i ? ", " : "", s->choices[i]);
    return b.p;
}

/* ---- the config file ---- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

static void file_keys(ml_buf_t *b)
{
    int first = 1;
    for (int i = 0; i < nslots; i++)
        if (!(slots[i].s->flags & (ML_SET_ENV_ONLY | ML_SET_NOT_READ))) {
            ml_buf_printf(b, "%s%s", first ? "" : ", ", slots[i].s->key);
            first = 0;
        }
}

static int set_from_file(slot_t *sl, const char *value, int lineno, ml_buf_t *err)
{
    if (sl->file_line) {
        ml_buf_printf(err, "mpilens: MPILENS_CONFIG='%s': key '%s' at line %d is already set at "
                      "line %d%s", config_path, sl->s->key, lineno, sl->file_line,
                      (sl->s->flags & ML_SET_BARE) ? " (lines holding only a name add to it)" : "");
        return -1;
    }
    sl->file_line = lineno;
    if (sl->src == SRC_ENV)
        return 0; /* the environment wins */
    char *copy = strdup(value);
    if (!copy)
        return ml_buf_printf(err, "mpilens: out of memory reading the config file"), -1;
    sl->value = copy; /* kept for the life of the process: settings point into it */
    sl->src = SRC_FILE;
    sl->line = lineno;
    return 0;
}

static int read_file(const slot_t *cfg, ml_buf_t *err)
{
    const char *path = cfg->value;
    ml_buf_t why = {0};
    FILE *f = ml_open_regular(path, &why);
    if (!f) {
        ml_settings_fail(err, cfg->s->key, "is invalid: %s (expected %s)", why.p, cfg->accepted);
        ml_buf_free(&why);
        return -1;
    }
    config_path = path;
    char *line = NULL;
    size_t cap = 0;
    int lineno = 0, rc = 0, bare_line = 0;
    ml_buf_t bare = {0};
    errno = 0;
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        lineno++;
        char *h = strchr(line, '#');
        if (h)
            *h = 0;
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) { /* a name on its own: one entry of the bare-line list */
            ml_buf_printf(&bare, "%s%s", bare.n ? "," : "", s);
            if (!bare_line)
                bare_line = lineno;
            continue;
        }
        *eq = 0;
        char *k = trim(s), *v = trim(eq + 1);
        slot_t *sl = find(k, 1);
        if (!sl) {
            ml_buf_printf(err, "mpilens: MPILENS_CONFIG='%s': unknown key '%s' at line %d: "
                          "expected one of ", path, k, lineno);
            file_keys(err);
            rc = -1;
            break;
        }
        rc = set_from_file(sl, v, lineno, err);
    }
    if (rc == 0 && ferror(f))
        rc = ml_settings_fail(err, cfg->s->key, "cannot be read: %s", strerror(errno ? errno : EIO));
    if (rc == 0 && bare.n) {
        slot_t *sl = NULL;
        for (int i = 0; i < nslots && !sl; i++)
            if (slots[i].s->flags & ML_SET_BARE)
                sl = &slots[i];
        if (!sl)
            rc = -1, ml_buf_printf(err, "mpilens: MPILENS_CONFIG='%s': line %d holds no '=': "
                                   "expected key = value", path, bare_line);
        else
            rc = set_from_file(sl, bare.p, bare_line, err);
    }
    ml_buf_free(&bare);
    free(line);
    fclose(f);
    return rc;
}

int ml_settings_load(const ml_setting_part *parts, int n, int with_file, ml_buf_t *err)
{
    int total = 0;
    for (int p = 0; p < n; p++)
        for (const ml_setting *s = parts[p].table; s && s->key; s++)
            total++;
    free(slots);
    slots = calloc((size_t)(total ? total : 1), sizeof *slots);
    nslots = 0;
    config_path = NULL;
    if (!slots)
        return ml_buf_printf(err, "mpilens: out of memory reading the settings"), -1;
    for (int p = 0; p < n; p++)
        for (const ml_setting *s = parts[p].table; s && s->key; s++) {
            slot_t *sl = &slots[nslots++];
            char env[128];
            env_name(env, sizeof env, s->key);
            const char *v = getenv(env);
            *sl = (slot_t){s, parts[p].name, accepted_text(s), v ? v : s->def,
                           v ? SRC_ENV : SRC_DEFAULT, 0, 0};
        }
    /* the config file first: its values come before the defaults */
    for (int i = 0; i < nslots; i++) {
        slot_t *sl = &slots[i];
        if (!(sl->s->flags & ML_SET_CONFIG) || !with_file || sl->src != SRC_ENV)
            continue;
        if (apply(sl, err) != 0 || read_file(sl, err) != 0)
            return -1;
    }
    for (int i = 0; i < nslots; i++)
        if (apply(&slots[i], err) != 0)
            return -1;
    return 0;
}

void ml_settings_json(ml_buf_t *b)
{
    ml_buf_printf(b, "\"config\":");
    if (config_path)
        ml_buf_json_str(b, config_path);
    else
        ml_buf_printf(b, "null");
    ml_buf_printf(b, ",\"settings\":[");
    for (int i = 0; i < nslots; i++) {
        const slot_t *sl = &slots[i];
        const ml_setting *s = sl->s;
        char env[128];
        env_name(env, sizeof env, s->key);
        ml_buf_printf(b, "%s{\"key\":", i ? "," : "");
        ml_buf_json_str(b, s->key);
        ml_buf_printf(b, ",\"env\":\"%s\",\"part\":", env);
        ml_buf_json_str(b, sl->part);
        ml_buf_printf(b, ",\"type\":\"%s\",\"default\":", type_names[s->type]);
        if (s->def)
            ml_buf_json_str(b, s->def);
        else
            ml_buf_printf(b, "null");
        ml_buf_printf(b, ",\"unset\":");
        ml_buf_json_str(b, s->unset);
        ml_buf_printf(b, ",\"accepted\":");
        ml_buf_json_str(b, sl->accepted);
        ml_buf_printf(b, ",\"help\":");
        ml_buf_json_str(b, s->help);
        if (s->type == ML_SET_INT || s->type == ML_SET_REAL)
            ml_buf_printf(b, ",\"min\":%.17g,\"max\":%.17g", s->lo, s->hi);
        if (s->type == ML_SET_CHOICE) {
            ml_buf_printf(b, ",\"choices\":[");
            for (int k = 0; s->choices[k]; k++) {
                ml_buf_printf(b, "%s", k ? "," : "");
                ml_buf_json_str(b, s->choices[k]);
            }
            ml_buf_printf(b, "]");
        }
        ml_buf_printf(b, ",\"file_key\":%s,\"read_by_library\":%s,\"value\":",
                      (s->flags & (ML_SET_ENV_ONLY | ML_SET_NOT_READ)) ? "false" : "true",
                      (s->flags & ML_SET_NOT_READ) ? "false" : "true");
        if (sl->value)
            ml_buf_json_str(b, sl->value);
        else
            ml_buf_printf(b, "null");
        ml_buf_printf(b, ",\"source\":\"%s\"", src_names[sl->src]);
        if (sl->src == SRC_FILE)
            ml_buf_printf(b, ",\"line\":%d", sl->line);
        ml_buf_printf(b, "}");
    }
    ml_buf_printf(b, "]");
}
