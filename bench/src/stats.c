/* Sample statistics: median, 95 % range, distribution-free 95 % confidence
 * interval of the median, Tukey far-out outliers (flagged, never dropped). */
#define _POSIX_C_SOURCE 200809L
#include "mlb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double quantile(const double *s, int n, double q)   /* s sorted, type 7 */
{
    if (n == 1) return s[0];
    double h = (n - 1) * q;
    int i = (int)floor(h);
    if (i >= n - 1) return s[n - 1];
    return s[i] + (h - i) * (s[i + 1] - s[i]);
}

double ml_median(const double *x, int n)
{
    if (n <= 0) return NAN;
    double *s = malloc((size_t)n * sizeof *s);
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp);
    double m = quantile(s, n, 0.5);
    free(s);
    return m;
}

void ml_stats_compute(const double *x, int n, ml_stats *st)
{
    memset(st, 0, sizeof *st);
    st->n = n;
    if (n <= 0) {
        st->median = st->p2_5 = st->p97_5 = st->ci_lo = st->ci_hi = NAN;
        st->min = st->max = st->mean = st->stddev = st->fence_lo = st->fence_hi = NAN;
        return;
    }
    double *s = malloc((size_t)n * sizeof *s);
    memcpy(s, x, (size_t)n * sizeof *s);
    qsort(s, (size_t)n, sizeof *s, cmp);
    st->median = quantile(s, n, 0.5);
    st->p2_5 = quantile(s, n, 0.025);
    st->p97_5 = quantile(s, n, 0.975);
    st->min = s[0];
    st->max = s[n - 1];
    double sum = 0, sq = 0;
    for (int i = 0; i < n; i++) sum += s[i];
    st->mean = sum / n;
    for (int i = 0; i < n; i++) sq += (s[i] - st->mean) * (s[i] - st->mean);
    st->stddev = n > 1 ? sqrt(sq / (n - 1)) : 0.0;
    /* order statistics j..k (1-based) bracketing the median with ~95 % confidence */
    int j = (int)floor(n / 2.0 - 0.98 * sqrt((double)n));
    int k = (int)ceil(n / 2.0 + 1 + 0.98 * sqrt((double)n));
    if (j < 1) j = 1;
    if (k > n) k = n;
    st->ci_lo = s[j - 1];
    st->ci_hi = s[k - 1];
    double q1 = quantile(s, n, 0.25), q3 = quantile(s, n, 0.75), iqr = q3 - q1;
    st->fence_lo = q1 - 3 * iqr;
    st->fence_hi = q3 + 3 * iqr;
    for (int i = 0; i < n; i++)
        if (x[i] < st->fence_lo || x[i] > st->fence_hi) st->n_outliers++;
    free(s);
}

void ml_json_stats(ml_json *w, const char *k, const double *x, int n, double scale)
{
    ml_stats st;
    ml_stats_compute(x, n, &st);
    ml_json_obj(w, k);
    ml_json_int(w, "n", n);
    ml_json_num(w, "median", st.median * scale);
    ml_json_num(w, "p2_5", st.p2_5 * scale);
    ml_json_num(w, "p97_5", st.p97_5 * scale);
    ml_json_arr(w, "median_ci95");
    ml_json_num(w, NULL, st.ci_lo * scale);
    ml_json_num(w, NULL, st.ci_hi * scale);
    ml_json_end(w);
    ml_json_num(w, "min", st.min * scale);
    ml_json_num(w, "max", st.max * scale);
    ml_json_num(w, "mean", st.mean * scale);
    ml_json_num(w, "stddev", st.stddev * scale);
    ml_json_int(w, "outliers", st.n_outliers);
    ml_json_arr(w, "outlier_samples");
    int shown = 0;
    for (int i = 0; i < n && shown < 64; i++)
        if (x[i] < st.fence_lo || x[i] > st.fence_hi) { ml_json_int(w, NULL, i); shown++; }
    ml_json_end(w);
    ml_json_end(w);
}
