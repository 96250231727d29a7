/* Pricing's robust per-group fits (engine_fit.h): the forward and smile fits, and the
 * per-group medians both trim outliers with. Per-group sums are accumulated in point order, as numpy's
 * bincount does; the 3x3 normal equations are solved by LU with partial pivoting. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "omdp/engine_fit.h"

#define MAD_SCALE 1.4826
#define SORT_SMALL 24 /* groups up to this many values are sorted in place by insertion */

/* a before b: numbers in order, NaN after every number */
static inline int before(double a, double b)
{
    return a < b || (!isnan(a) && isnan(b));
}

static int cmp_values(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

static void sort_values(double *v, uint64_t n)
{
    if (n > SORT_SMALL) {
        qsort(v, n, sizeof *v, cmp_values);
        return;
    }
    for (uint64_t i = 1; i < n; i++) {
        double x = v[i];
        uint64_t j = i;
        for (; j > 0 && before(x, v[j - 1]); j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/* Scratch of the median: the values bucketed by group. */
typedef struct median_scratch {
    double *buf;     /* n */
    uint64_t *start; /* n_groups + 1 */
    uint64_t *cur;   /* n_groups */
} median_scratch_t;

static int scratch_new(median_scratch_t *s, uint64_t n, uint64_t n_groups)
{
    s->buf = malloc((n ? n : 1) * sizeof *s->buf);
    s->start = malloc((n_groups + 1) * sizeof *s->start);
    s->cur = malloc((n_groups ? n_groups : 1) * sizeof *s->cur);
    return s->buf && s->start && s->cur ? 0 : -2;
}

static void scratch_free(median_scratch_t *s)
{
    free(s->buf);
    free(s->start);
    free(s->cur);
}

static void median_by_group(const double *v, const int64_t *g, const uint8_t *use, uint64_t n, uint64_t n_groups,
                            double *out, const median_scratch_t *s)
{
    memset(s->start, 0, (n_groups + 1) * sizeof *s->start);
    for (uint64_t i = 0; i < n; i++)
        if (!use || use[i])
            s->start[g[i] + 1]++;
    for (uint64_t q = 0; q < n_groups; q++)
        s->start[q + 1] += s->start[q];
    memcpy(s->cur, s->start, n_groups * sizeof *s->cur);
    for (uint64_t i = 0; i < n; i++)
        if (!use || use[i])
            s->buf[s->cur[g[i]]++] = v[i];
    for (uint64_t q = 0; q < n_groups; q++) {
        uint64_t c = s->start[q + 1] - s->start[q];
        double *b = s->buf + s->start[q];
        if (!c) {
            out[q] = NAN;
            continue;
        }
        sort_values(b, c);
        out[q] = 0.5 * (b[(c - 1) / 2] + b[c / 2]);
    }
}

static int groups_ok(const int64_t *g, uint64_t n, uint64_t n_groups)
{
    for (uint64_t i = 0; i < n; i++)
        if (g[i] < 0 || (uint64_t)g[i] >= n_groups)
            return 0;
    return 1;
}

/* The outlier cut of a group from its median absolute residual (NaN: no inlier, no cut):
 * max(outlier_mads * MAD_SCALE * mad, at_least), NaN when either is NaN (as numpy's maximum). */
static double mad_cut(double mad, double outlier_mads, double at_least)
{
    double x = outlier_mads * MAD_SCALE * (isnan(mad) ? INFINITY : mad);
    return isnan(x) || isnan(at_least) ? NAN : x > at_least ? x : at_least;
}

/* Solves m x = r in place (x in r) by LU with partial pivoting; returns det(m). */
static double solve3(double m[3][3], double r[3])
{
    double det = 1.0;
    for (int c = 0; c < 3; c++) {
        int p = c;
        for (int i = c + 1; i < 3; i++)
            if (fabs(m[i][c]) > fabs(m[p][c]))
                p = i;
        if (p != c) {
            for (int j = 0; j < 3; j++) {
                double t = m[c][j];
                m[c][j] = m[p][j];
                m[p][j] = t;
            }
            double t = r[c];
            r[c] = r[p];
            r[p] = t;
            det = -det;
        }
        det *= m[c][c];
        if (m[c][c] == 0.0)
            return 0.0;
        for (int i = c + 1; i < 3; i++) {
            double f = m[i][c] / m[c][c];
            for (int j = c; j < 3; j++)
                m[i][j] -= f * m[c][j];
            r[i] -= f * r[c];
        }
    }
    for (int c = 2; c >= 0; c--) {
        double x = r[c];
        for (int j = c + 1; j < 3; j++)
            x -= m[c][j] * r[j];
        r[c] = x / m[c][c];
    }
    return det;
}

enum { S0, S1, S2, S3, S4, T0, T1, T2, SUMS };

/* One weighted least-squares round over the points with w[i] set (see engine_fit.h). */
static void quadratic(const double *k, const double *y, const int64_t *g, const uint8_t *w, uint64_t n,
                      uint64_t n_groups, uint32_t min_points, double *acc, int64_t *cnt, double *coef, double *med,
                      const median_scratch_t *s)
{
    memset(acc, 0, n_groups * SUMS * sizeof *acc);
    memset(cnt, 0, n_groups * sizeof *cnt);
    for (uint64_t i = 0; i < n; i++) {
        if (!w[i])
            continue;
        double x = k[i], x2 = x * x, v = y[i];
        double *a = &acc[g[i] * SUMS];
        a[S0] += 1.0;
        a[S1] += x;
        a[S2] += x2;
        a[S3] += x2 * x;
        a[S4] += pow(x, 4.0);
        a[T0] += v;
        a[T1] += v * x;
        a[T2] += v * x2;
        cnt[g[i]]++;
    }
    int64_t need_quad = min_points > 3 ? min_points : 3, need_flat = min_points > 1 ? min_points : 1;
    int medians = 0;
    for (uint64_t q = 0; q < n_groups; q++) {
        const double *a = &acc[q * SUMS];
        double *c = &coef[3 * q];
        if (cnt[q] >= need_quad) {
            double m[3][3] = {{a[S0], a[S1], a[S2]}, {a[S1], a[S2], a[S3]}, {a[S2], a[S3], a[S4]}};
            double r[3] = {a[T0], a[T1], a[T2]};
            double det = solve3(m, r);
            double scale = a[S0] * fmax(a[S2], 1e-300) * fmax(a[S4], 1e-300);
            if (fabs(det) > 1e-12 * scale) {
                c[0] = r[0], c[1] = r[1], c[2] = r[2];
                continue;
            }
        }
        if (cnt[q] >= need_flat) {
            if (!medians++)
                median_by_group(y, g, w, n, n_groups, med, s);
            c[0] = med[q], c[1] = 0.0, c[2] = 0.0;
            continue;
        }
        c[0] = c[1] = c[2] = NAN;
    }
}

int omdp_fit_smiles(const double *k, const double *vol, const int64_t *group, uint64_t n, uint64_t n_groups,
                    uint32_t min_points, double outlier_mads, double floor_vol, uint32_t rounds, double *coef,
                    int64_t *points, double *k_min, double *k_max)
{
    if ((n && (!k || !vol || !group)) || (n_groups && (!coef || !points || !k_min || !k_max)) ||
        !groups_ok(group, n, n_groups))
        return -1;
    uint64_t m = n ? n : 1, ng = n_groups ? n_groups : 1;
    double *kk = malloc(m * sizeof *kk), *yy = malloc(m * sizeof *yy), *resid = malloc(m * sizeof *resid);
    int64_t *gg = malloc(m * sizeof *gg), *cnt = malloc(ng * sizeof *cnt);
    uint8_t *w = malloc(m);
    double *acc = malloc(ng * SUMS * sizeof *acc), *med = malloc(ng * sizeof *med), *cut = malloc(ng * sizeof *cut);
    median_scratch_t s;
    int rc = scratch_new(&s, n, n_groups);
    if (!kk || !yy || !resid || !gg || !cnt || !w || !acc || !med || !cut)
        rc = -2;
    if (rc == 0) {
        uint64_t p = 0; /* the points with finite k and vol, in order */
        for (uint64_t i = 0; i < n; i++)
            if (isfinite(k[i]) && isfinite(vol[i])) {
                kk[p] = k[i], yy[p] = vol[i], gg[p] = group[i], w[p] = 1;
                p++;
            }
        for (uint64_t q = 0; q < 3 * n_groups; q++)
            coef[q] = NAN;
        for (uint32_t r = 0; r < rounds; r++) {
            quadratic(kk, yy, gg, w, p, n_groups, min_points, acc, cnt, coef, med, &s);
            if (r == rounds - 1)
                break;
            for (uint64_t i = 0; i < p; i++) {
                const double *c = &coef[3 * gg[i]];
                resid[i] = fabs(isfinite(c[0]) ? yy[i] - (c[0] + c[1] * kk[i] + c[2] * kk[i] * kk[i]) : 0.0);
            }
            median_by_group(resid, gg, w, p, n_groups, med, &s);
            for (uint64_t q = 0; q < n_groups; q++)
                cut[q] = mad_cut(med[q], outlier_mads, floor_vol);
            for (uint64_t i = 0; i < p; i++)
                w[i] = resid[i] <= cut[gg[i]];
        }
        for (uint64_t q = 0; q < n_groups; q++) {
            points[q] = 0;
            k_min[q] = k_max[q] = NAN;
        }
        for (uint64_t i = 0; i < p; i++) {
            if (!w[i])
                continue;
            uint64_t q = (uint64_t)gg[i];
            if (!points[q]++ || kk[i] < k_min[q])
                k_min[q] = kk[i];
            if (points[q] == 1 || kk[i] > k_max[q])
                k_max[q] = kk[i];
        }
        for (uint64_t q = 0; q < n_groups; q++) {
            double *c = &coef[3 * q];
            int no_smile = !isfinite(c[0]);
            if (no_smile || !points[q])
                c[0] = c[1] = c[2] = NAN;
            if (no_smile)
                points[q] = 0;
        }
    }
    free(kk), free(yy), free(resid), free(gg), free(cnt), free(w), free(acc), free(med), free(cut);
    scratch_free(&s);
    return rc;
}

enum { SW, SWK, SWY, SKK, SKY, SRR, FSUMS };

/* One weighted line per group over the pairs with w[i] > 0 (see engine_fit.h); slope and
 * icpt: the free line's, for the next round's residuals. */
static void line_fit(const double *k, const double *y, const int64_t *g, const double *w, uint64_t n,
                     uint64_t n_groups, const double *prior, uint32_t min_pairs, double max_se, double *acc,
                     double *forward, double *discount, int64_t *kept, uint8_t *fitted, double *slope, double *icpt)
{
    memset(acc, 0, n_groups * FSUMS * sizeof *acc);
    memset(kept, 0, n_groups * sizeof *kept);
    for (uint64_t i = 0; i < n; i++) {
        if (!(w[i] > 0))
            continue;
        double *a = &acc[g[i] * FSUMS];
        a[SW] += w[i];
        a[SWK] += w[i] * k[i];
        a[SWY] += w[i] * y[i];
        kept[g[i]]++;
    }
    for (uint64_t q = 0; q < n_groups; q++) { /* the means, kept in SWK / SWY */
        double *a = &acc[q * FSUMS];
        double safe = a[SW] > 0 ? a[SW] : 1.0;
        a[SWK] /= safe;
        a[SWY] /= safe;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (!(w[i] > 0))
            continue;
        double *a = &acc[g[i] * FSUMS];
        double dk = k[i] - a[SWK];
        a[SKK] += w[i] * dk * dk;
        a[SKY] += w[i] * dk * (y[i] - a[SWY]);
    }
    for (uint64_t q = 0; q < n_groups; q++)
        slope[q] = -acc[q * FSUMS + SKY] / acc[q * FSUMS + SKK];
    for (uint64_t i = 0; i < n; i++) {
        if (!(w[i] > 0))
            continue;
        double *a = &acc[g[i] * FSUMS];
        double r = (y[i] - a[SWY]) + slope[g[i]] * (k[i] - a[SWK]);
        a[SRR] += w[i] * r * r;
    }
    for (uint64_t q = 0; q < n_groups; q++) {
        const double *a = &acc[q * FSUMS];
        double dof = kept[q] - 2 > 1 ? (double)(kept[q] - 2) : 1.0;
        double se = sqrt(a[SRR] / dof / a[SKK]);
        int fit = kept[q] >= (int64_t)min_pairs && a[SKK] > 0 && slope[q] > 0.5 && slope[q] < 1.1 && se < max_se;
        fitted[q] = (uint8_t)fit;
        discount[q] = fit ? slope[q] : prior[q];
        forward[q] = kept[q] > 0 ? (a[SWY] + discount[q] * a[SWK]) / discount[q] : NAN;
        icpt[q] = a[SWY] + slope[q] * a[SWK];
    }
}

int omdp_fit_forwards(const double *strike, const double *y, const double *weight, const int64_t *group, uint64_t n,
                      uint64_t n_groups, const double *prior, uint32_t min_pairs, double outlier_mads, double min_cut,
                      double max_se, uint32_t rounds, double *forward, double *discount, int64_t *kept,
                      uint8_t *fitted)
{
    if ((n && (!strike || !y || !weight || !group)) ||
        (n_groups && (!prior || !forward || !discount || !kept || !fitted)) || !rounds ||
        !groups_ok(group, n, n_groups))
        return -1;
    uint64_t m = n ? n : 1, ng = n_groups ? n_groups : 1;
    double *w = malloc(m * sizeof *w), *resid = malloc(m * sizeof *resid);
    uint8_t *inl = malloc(m);
    double *acc = malloc(ng * FSUMS * sizeof *acc), *slope = malloc(ng * sizeof *slope);
    double *icpt = malloc(ng * sizeof *icpt), *med = malloc(ng * sizeof *med);
    median_scratch_t s;
    int rc = scratch_new(&s, n, n_groups);
    if (!w || !resid || !inl || !acc || !slope || !icpt || !med)
        rc = -2;
    if (rc == 0) {
        if (n)
            memcpy(w, weight, n * sizeof *w);
        for (uint32_t r = 0; r < rounds; r++) {
            line_fit(strike, y, group, w, n, n_groups, prior, min_pairs, max_se, acc, forward, discount, kept, fitted,
                     slope, icpt);
            if (r == rounds - 1)
                break;
            /* outliers judged against the free line where three pairs or more give one */
            for (uint64_t q = 0; q < n_groups; q++)
                if (!(isfinite(slope[q]) && kept[q] >= 3)) {
                    slope[q] = discount[q];
                    icpt[q] = discount[q] * forward[q];
                }
            for (uint64_t i = 0; i < n; i++) {
                uint64_t q = (uint64_t)group[i];
                resid[i] = fabs(y[i] - (icpt[q] - slope[q] * strike[i]));
                inl[i] = w[i] > 0;
            }
            median_by_group(resid, group, inl, n, n_groups, med, &s);
            for (uint64_t q = 0; q < n_groups; q++)
                med[q] = mad_cut(med[q], outlier_mads, min_cut); /* now the cut */
            for (uint64_t i = 0; i < n; i++)
                w[i] = resid[i] <= med[group[i]] ? weight[i] : 0.0;
        }
    }
    free(w), free(resid), free(inl), free(acc), free(slope), free(icpt), free(med);
    scratch_free(&s);
    return rc;
}
