/* io: MPI-IO patterns (SS-ken 2010, docs/references.md).  Contiguous: one shared file through
 * MPI-IO (MPI_File_write_at), one file per process (POSIX write), gather to a
 * master that writes (POSIX); strided: independent MPI_File_write vs collective
 * MPI_File_write_all through a vector file view.  Each sample is timed to the
 * write call's return and to the return of MPI_File_sync/fsync (slowest rank).
 * Files hold ml_pat(global offset, seed); they are verified, then removed. */
#define _GNU_SOURCE
#include "mlb.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { P_SHARED, P_FPP, P_MASTER, P_SINDEP, P_SCOLL, NPAT };
static const char *const pat_names[NPAT] = {"shared", "fpp", "master", "strided_indep",
                                            "strided_coll"};

static void path_of(char *out, size_t n, const char *dir, int p, int rank)
{
    if (p == P_FPP) snprintf(out, n, "%s/mpilens-io-fpp.%d.dat", dir, rank);
    else snprintf(out, n, "%s/mpilens-io-%s.dat", dir, pat_names[p]);
}

static void write_all_posix(int fd, const unsigned char *b, size_t n, const char *path)
{
    while (n) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) ml_fatal("write %s: %s", path, strerror(errno));
        b += k;
        n -= (size_t)k;
    }
}

/* wrong bytes of file `path` (expected length len, content from offset off0) */
static long verify(const char *path, long long len, uint64_t off0, unsigned seed)
{
    FILE *f = fopen(path, "rb");
    if (!f) return len ? len : 1;
    struct stat st;
    long bad = 0;
    if (fstat(fileno(f), &st) || st.st_size != len) bad = 1;
    unsigned char chunk[65536];
    uint64_t off = 0;
    size_t k;
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) {
        bad += (long)ml_check(chunk, k, off0 + off, seed);
        off += k;
    }
    fclose(f);
    return bad;
}

int ml_io(ml_json *out, int argc, char **argv)
{
    (void)argc; (void)argv;
    const char *udir = ml_opt_str("dir", NULL);
    long long size = ml_opt_size("size", 4 << 20);
    long long block = ml_opt_size("block", 4096);
    int nblocks = (int)ml_opt_int("nblocks", 64, 1, 1 << 24);
    int samples = (int)ml_opt_int("samples", 20, 1, 1000000);
    unsigned pats = ml_opt_names("patterns", pat_names, NPAT, (1u << NPAT) - 1);
    int keep = ml_opt_flag("keep");
    ml_opts_finish();
    if (size < 1 || size > (1LL << 30))
        ml_usage("--size %lld is out of range (accepted: 1 B to 1 GiB per rank)", size);
    if (block < 1 || block * nblocks > (1LL << 30) || block * ml_size > (1LL << 31) - 1)
        ml_usage("--block %lld x --nblocks %d is out of range (accepted: 1 B blocks, at most "
                 "1 GiB per rank)", block, nblocks);
    if (size * ml_size > (1LL << 31) - 1)
        ml_usage("--size %lld x %d ranks exceeds 2 GiB (the master pattern gathers it)", size, ml_size);

    char dir[4096];
    int tmp = udir == NULL;
    if (ml_rank == 0) {
        if (tmp) {
            const char *t = getenv("TMPDIR");
            snprintf(dir, sizeof dir, "%s/mpilens-io-XXXXXX", t && *t ? t : "/tmp");
            if (!mkdtemp(dir)) dir[0] = 0;
        } else snprintf(dir, sizeof dir, "%s", udir);
    }
    MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
    int ok = dir[0] != 0;
    if (ok) {          /* every rank must be able to create files there */
        char probe[4200];
        snprintf(probe, sizeof probe, "%s/.mpilens-probe-%d", dir, ml_rank);
        int fd = open(probe, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        ok = fd >= 0;
        if (ok) { close(fd); unlink(probe); }
    }
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        if (tmp && ml_rank == 0 && dir[0]) rmdir(dir);
        ml_usage("--dir '%s' is not a directory where every rank can create files", udir ? udir : dir);
    }

    int P = ml_size, me = ml_rank;
    size_t sbytes = (size_t)block * (size_t)nblocks;
    unsigned char *buf = ml_alloc(sbytes > (size_t)size ? sbytes : (size_t)size);
    unsigned char *gath = me == 0 && (pats & (1u << P_MASTER)) ? ml_alloc((size_t)(size * P)) : NULL;
    MPI_Datatype ftype;
    MPI_Type_vector(nblocks, (int)block, (int)(block * P), MPI_BYTE, &ftype);
    MPI_Type_commit(&ftype);
    double *x = malloc(2 * (size_t)samples * sizeof *x);
    long errors = 0;
    int all_removed = 1;
    if (me == 0) {
        ml_json_obj(out, "options");
        ml_json_str(out, "dir", dir);
        ml_json_bool(out, "temporary_dir", tmp);
        ml_json_int(out, "size", size);
        ml_json_int(out, "block", block);
        ml_json_int(out, "nblocks", nblocks);
        ml_json_int(out, "samples", samples);
        ml_json_bool(out, "keep", keep);
        ml_json_end(out);
        ml_json_arr(out, "results");
    }
    int npat = 0, done = 0;
    for (int p = 0; p < NPAT; p++) npat += (pats >> p) & 1;
    /* the expected duration, said after the first sample (before the first progress
     * line): that sample's time, the slowest rank's, for every sample of every pattern */
    double started = MPI_Wtime(), expected = -1;
    for (int p = 0; p < NPAT; p++) {
        if (!(pats & (1u << p))) continue;
        int strided = p == P_SINDEP || p == P_SCOLL;
        long long total = strided ? (long long)sbytes * P : size * P;
        char path[4200];
        path_of(path, sizeof path, dir, p, me);
        unsigned seed = 0;
        for (int j = 0; j < samples; j++) {
            seed = (unsigned)j + 1;
            if (strided)
                for (int b = 0; b < nblocks; b++)
                    ml_fill(buf + (size_t)b * block, (size_t)block,
                            (uint64_t)(((long long)b * P + me) * block), seed);
            else ml_fill(buf, (size_t)size, (uint64_t)(me * size), seed);
            if (p == P_FPP || me == 0) unlink(path);
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_File fh = MPI_FILE_NULL;
            int fd = -1;
            if (p == P_FPP || (p == P_MASTER && me == 0)) {
                fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
                if (fd < 0) ml_fatal("open %s: %s", path, strerror(errno));
            } else if (p != P_MASTER) {
                if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                                  MPI_INFO_NULL, &fh) != MPI_SUCCESS)
                    ml_fatal("MPI_File_open %s failed", path);
                if (strided)
                    MPI_File_set_view(fh, (MPI_Offset)(me * block), MPI_BYTE, ftype, "native",
                                      MPI_INFO_NULL);
            }
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime(), tw;
            switch (p) {
            case P_SHARED:
                MPI_File_write_at(fh, (MPI_Offset)(me * size), buf, (int)size, MPI_BYTE,
                                  MPI_STATUS_IGNORE);
                tw = MPI_Wtime();
                MPI_File_sync(fh);
                break;
            case P_FPP:
                write_all_posix(fd, buf, (size_t)size, path);
                tw = MPI_Wtime();
                fsync(fd);
                break;
            case P_MASTER:
                MPI_Gather(buf, (int)size, MPI_BYTE, gath, (int)size, MPI_BYTE, 0, MPI_COMM_WORLD);
                if (me == 0) write_all_posix(fd, gath, (size_t)(size * P), path);
                tw = MPI_Wtime();
                if (me == 0) fsync(fd);
                break;
            case P_SINDEP:
                MPI_File_write(fh, buf, (int)sbytes, MPI_BYTE, MPI_STATUS_IGNORE);
                tw = MPI_Wtime();
                MPI_File_sync(fh);
                break;
            default:
                MPI_File_write_all(fh, buf, (int)sbytes, MPI_BYTE, MPI_STATUS_IGNORE);
                tw = MPI_Wtime();
                MPI_File_sync(fh);
                break;
            }
            double t[2] = {tw - t0, MPI_Wtime() - t0};
            MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            x[j] = t[0];
            x[samples + j] = t[1];
            if (fh != MPI_FILE_NULL) MPI_File_close(&fh);
            if (fd >= 0) close(fd);
            if (expected < 0) {
                double one = MPI_Wtime() - started;
                MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
                expected = one * samples * npat;
                if (me == 0) ml_announce("io", expected, strided ? (long long)sbytes : size);
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);
        long bad = 0;
        if (p == P_FPP) bad = verify(path, size, (uint64_t)(me * size), seed);
        else if (me == 0) bad = verify(path, total, 0, seed);
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
        if (bad) {
            if (me == 0)
                fprintf(stderr, "mpilens-bench: io %s: %ld wrong bytes in %s\n", pat_names[p],
                        bad, path);
            errors++;
        }
        int removed = 1;
        if (!keep && (p == P_FPP || me == 0)) removed = unlink(path) == 0;
        MPI_Allreduce(MPI_IN_PLACE, &removed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        all_removed &= removed;
        if (me == 0) {
            double mw = ml_median(x, samples), ms = ml_median(x + samples, samples);
            ml_json_obj(out, NULL);
            ml_json_str(out, "pattern", pat_names[p]);
            ml_json_int(out, "bytes_total", total);
            ml_json_stats(out, "write_s", x, samples, 1.0);
            ml_json_stats(out, "write_sync_s", x + samples, samples, 1.0);
            ml_json_num(out, "bw_write_Bps", (double)total / mw);
            ml_json_num(out, "bw_sync_Bps", (double)total / ms);
            ml_json_bool(out, "verified", bad == 0);
            ml_json_bool(out, "removed", !keep && removed);
            ml_json_arr(out, "files");
            if (p == P_FPP)
                for (int r = 0; r < P; r++) {
                    char q[4200];
                    path_of(q, sizeof q, dir, p, r);
                    ml_json_str(out, NULL, q);
                }
            else ml_json_str(out, NULL, path);
            ml_json_end(out);
            ml_json_int(out, "seed", seed);
            ml_json_end(out);
        }
        ml_progress(++done, npat);
    }
    if (me == 0) {
        ml_json_end(out);
        ml_json_num(out, "expected_s", expected);  /* said after the first sample */
        ml_json_num(out, "elapsed_s", MPI_Wtime() - started);  /* what it took (rank 0) */
        int rm = 0;
        if (tmp && !keep) rm = rmdir(dir) == 0;
        ml_json_bool(out, "dir_removed", rm);
        ml_json_bool(out, "files_removed", !keep && all_removed);
    }
    MPI_Type_free(&ftype);
    free(buf); free(gath); free(x);
    return (int)errors;
}
