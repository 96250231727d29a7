/* Limits for a series the engine sees for the first time, from its group's published model
 * (omdp_group_ref_t): Black-76 value on the smile, band and parity limits as the refresher
 * computes them (decision_engines/pricing/bands.py). Runs once per new series, on the hot
 * path, so its first quote is already checked; the next refresh supersedes it. */
#include <math.h>

#include "engine_internal.h"

static int64_t to_px(double dollars, int round_up)
{
    double v = dollars * (double)OMDP_PRICE_SCALE;
    if (!(v > -4.0e18))
        return INT64_MIN + 1;
    if (v > 4.0e18)
        return INT64_MAX - 1;
    return (int64_t)(round_up ? ceil(v) : floor(v));
}

static double norm_cdf(double x)
{
    return 0.5 * erfc(-x * M_SQRT1_2);
}

void eng_price_new_series(struct omdp_engine *e, uint32_t front, uint32_t slot)
{
    const eng_series_t *s = &e->series[slot];
    if (s->group == OMDP_ENGINE_NO_SLOT)
        return;
    const omdp_group_ref_t *g = &e->grefs[front][s->group];
    if (!(g->forward > 0.0) || !(g->discount > 0.0) || !(g->years > 0.0))
        return;
    const eng_series_meta_t *m = &e->meta[slot];
    double K = (double)m->strike_px / (double)OMDP_PRICE_SCALE;
    double F = g->forward, D = g->discount, T = g->years;
    omdp_series_ref_t *r = &e->refs[front][slot];
    if (!s->is_put) {
        double expected = D * (F - K);
        r->parity_lo = to_px(expected - g->parity_tol, 0);
        r->parity_hi = to_px(expected + g->parity_tol, 1);
    }
    if (!g->has_smile)
        return;
    double k = log(K / F);
    if (!(k >= g->k_min && k <= g->k_max))
        return;
    double sigma = g->smile_a + g->smile_b * k + g->smile_c * k * k;
    sigma = sigma < 0.01 ? 0.01 : sigma > 5.0 ? 5.0 : sigma;
    double sd = sigma * sqrt(T);
    double d1 = log(F / K) / sd + 0.5 * sd, d2 = d1 - sd;
    double value = s->is_put ? D * (K * norm_cdf(-d2) - F * norm_cdf(-d1)) : D * (F * norm_cdf(d1) - K * norm_cdf(d2));
    double vega = D * F * sqrt(T) * exp(-0.5 * d1 * d1) / sqrt(2.0 * M_PI);
    double half = g->band_abs;
    half = g->band_rel * value > half ? g->band_rel * value : half;
    half = g->band_vol * vega > half ? g->band_vol * vega : half;
    if (!isfinite(value) || !isfinite(half))
        return;
    r->band_lo = to_px(value - half, 0);
    r->band_hi = to_px(value + half, 1);
}
