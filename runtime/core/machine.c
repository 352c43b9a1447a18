/* What the profile records of the machine and of the launch (issue 30): per
 * rank the online CPUs and the rank's CPU affinity; in the header the launcher
 * line (the nearest ancestor process that is a known launcher: mpirun,
 * mpiexec, orterun, prterun, srun; its /proc cmdline) and the MPI's transport
 * and interface settings from rank 0's environment.  Read once when the
 * profile is formatted (MPI_Finalize), never on a call's path. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "module.h"

extern char **environ;

/* ,"cpus_online":N,"affinity_cpus":K,"affinity":"0-3,6" */
static void ml_machine_rank(ml_buf_t *b)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    ml_buf_printf(b, ",\"cpus_online\":%ld", online > 0 ? online : 0);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) {
        ml_buf_printf(b, ",\"affinity_cpus\":0,\"affinity\":\"\""); /* unknown */
        return;
    }
    char list[1024];
    size_t n = 0;
    int first = -1, count = 0;
    list[0] = 0;
    for (int c = 0; c <= CPU_SETSIZE; c++) {
        int in = c < CPU_SETSIZE && CPU_ISSET(c, &set);
        count += in;
        if (in && first < 0)
            first = c;
        if (!in && first >= 0) {
            int w = first == c - 1 ? snprintf(list + n, sizeof list - n, "%s%d", n ? "," : "", first)
                                   : snprintf(list + n, sizeof list - n, "%s%d-%d", n ? "," : "", first, c - 1);
            if (w < 0 || (size_t)w >= sizeof list - n)
                break; /* cut: the count stays exact */
            n += (size_t)w;
            first = -1;
        }
    }
    ml_buf_printf(b, ",\"affinity_cpus\":%d,\"affinity\":", count);
    ml_buf_json_str(b, list);
}

static int launcher_name(const char *base)
{
    static const char *const names[] = {"mpirun", "mpiexec", "orterun", "prterun", "srun", NULL};
    for (int i = 0; names[i]; i++) {
        size_t k = strlen(names[i]);
        if (strncmp(base, names[i], k) == 0 && (base[k] == 0 || base[k] == '.'))
            return 1;
    }
    return 0;
}

/* The launcher line: up to 8 ancestors, the first whose program is a launcher;
 * 0 if none (another launcher, or a remote node). */
static int launcher_line(char *out, size_t cap)
{
    pid_t pid = getppid();
    for (int up = 0; up < 8 && pid > 1; up++) {
        char path[64], buf[4096];
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
        FILE *f = fopen(path, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[n] = 0;
        const char *base = strrchr(buf, '/') ? strrchr(buf, '/') + 1 : buf;
        if (n && launcher_name(base)) {
            size_t k = 0;
            for (size_t i = 0; i < n && k + 1 < cap; i++)
                out[k++] = buf[i] ? buf[i] : ' ';
            while (k && out[k - 1] == ' ')
                k--;
            out[k] = 0;
            return 1;
        }
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        f = fopen(path, "r");
        int ppid = 0;
        if (f) {
            char line[1024];
            size_t m = fread(line, 1, sizeof line - 1, f);
            fclose(f);
            line[m] = 0;
            const char *close = strrchr(line, ')'); /* the name may hold spaces */
            if (!close || sscanf(close + 1, " %*c %d", &ppid) != 1)
                ppid = 0;
        }
        pid = ppid;
    }
    return 0;
}

/* The environment variables that choose the MPI's transports and interfaces.  Not the
 * launcher's own internals: Intel MPI's hydra hands every rank HYDRA_BSTRAP_* (its
 * proxy tree: node id, upstream fd, ...) and HYDRA_LAUNCH_TYPE, which no user sets. */
static int transport_setting(const char *kv)
{
    static const char *const internals[] = {"HYDRA_BSTRAP_", "HYDRA_LAUNCH_TYPE=", NULL};
    for (int i = 0; internals[i]; i++)
        if (strncmp(kv, internals[i], strlen(internals[i])) == 0)
            return 0;
    static const char *const prefixes[] = {
        "OMPI_MCA_btl", "OMPI_MCA_pml", "OMPI_MCA_mtl", "OMPI_MCA_osc", "OMPI_MCA_oob_tcp_if",
        "OMPI_MCA_rmaps", "OMPI_MCA_hwloc_base_binding", "UCX_NET_DEVICES", "UCX_TLS",
        "UCX_MAX_RNDV_RAILS", "FI_PROVIDER", "I_MPI_FABRICS", "I_MPI_OFI_PROVIDER",
        "I_MPI_MULTIRAIL", "I_MPI_PIN", "MPIR_CVAR_CH4_NETMOD", "MPIR_CVAR_CH4_OFI",
        "MPIR_CVAR_NEMESIS", "MPIR_CVAR_CH3", "MPIR_CVAR_OFI", "HYDRA_", "SLURM_CPU_BIND",
        "SLURM_DISTRIBUTION", NULL};
    for (int i = 0; prefixes[i]; i++)
        if (strncmp(kv, prefixes[i], strlen(prefixes[i])) == 0)
            return 1;
    return 0;
}

/* ,"launch":{"line":"..." ("" if none found),"settings":{"VAR":"value",...}} */
static void ml_machine_header(ml_buf_t *b)
{
    char line[4096];
    ml_buf_printf(b, ",\"launch\":{\"line\":");
    ml_buf_json_str(b, launcher_line(line, sizeof line) ? line : ""); /* "": not found */
    ml_buf_printf(b, ",\"settings\":{");
    int k = 0;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq || !transport_setting(*e))
            continue;
        char name[256];
        size_t n = (size_t)(eq - *e) < sizeof name - 1 ? (size_t)(eq - *e) : sizeof name - 1;
        memcpy(name, *e, n);
        name[n] = 0;
        ml_buf_printf(b, "%s", k++ ? "," : "");
        ml_buf_json_str(b, name);
        ml_buf_printf(b, ":");
        ml_buf_json_str(b, eq + 1);
    }
    ml_buf_printf(b, "}}");
}

const ml_module_t ml_module_machine = {
    .name = "machine",
    .header_where_json = ml_machine_header,
    .rank_where_json = ml_machine_rank,
};
