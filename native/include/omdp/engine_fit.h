/* Pricing's robust per-group fits in C (decision_engines/pricing: forward.py, smile.py,
 * through fits_native.py).
 *
 * A pricing refresh fits, per (underlying, expiry) group that moved, a forward to its
 * call/put pairs and a volatility smile to its implied volatilities, each trimming outliers
 * by a per-group median of absolute residuals. As whole-array numpy (per-group sums by
 * bincount, a batched 3x3 solve, medians by a lexsort) the two took about 2.9 ms a replay
 * refresh over a few thousand points: a hundred-odd array passes, each with its own
 * allocation. Here a round is a few passes over the points and one over the groups. A
 * group's median is its middle value, or the mean of the two middle ones for an even count.
 *
 * Each function reads n points (group ids in [0, n_groups)), writes only its outputs and
 * returns 0, or -1 (nothing written) for a NULL pointer or a group id out of range, -2 when
 * its scratch memory cannot be allocated. Not for the hot path: they allocate. */
#ifndef OMDP_ENGINE_FIT_H
#define OMDP_ENGINE_FIT_H

#include <stdint.h>

/* The smile sigma(k) = a + b k + c k^2 of each group, least squares over its points (k,
 * vol) with finite k and vol, refitted `rounds` times without the points whose residual
 * exceeds max(outlier_mads * 1.4826 * the group's median absolute residual, floor_vol).
 * A group with at least max(3, min_points) points whose normal equations are not
 * singular (|det| > 1e-12 s0 s2 s4) gets the quadratic; one with at least
 * max(1, min_points) otherwise a flat smile at its points' median vol; others none.
 * Outputs per group: coef[3 g .. 3 g + 2] = (a, b, c) (NaN: no smile), points kept (0: no
 * smile), the smallest and largest k kept (NaN: none kept). */
int omdp_fit_smiles(const double *k, const double *vol, const int64_t *group, uint64_t n, uint64_t n_groups,
                    uint32_t min_points, double outlier_mads, double floor_vol, uint32_t rounds, double *coef,
                    int64_t *points, double *k_min, double *k_max);

/* The forward F and discount factor D of each group from its call/put pairs: a weighted
 * least-squares line y = D F - D K through the pairs (strike K, y = call mid - put mid,
 * weight), refitted `rounds` (>= 1) times without the pairs whose residual, against the
 * group's free line where three pairs or more give one, exceeds max(outlier_mads * 1.4826 *
 * the median absolute residual, min_cut). The fitted slope is the discount factor when the
 * group kept min_pairs pairs or more, it lies in (0.5, 1.1) and its standard error is below
 * max_se; otherwise D = prior[g] and only F is fitted. Outputs per group: forward (NaN: no
 * pair kept), discount, pairs kept, fitted (1: D from the pairs). -1 also for rounds 0. */
int omdp_fit_forwards(const double *strike, const double *y, const double *weight, const int64_t *group, uint64_t n,
                      uint64_t n_groups, const double *prior, uint32_t min_pairs, double outlier_mads, double min_cut,
                      double max_se, uint32_t rounds, double *forward, double *discount, int64_t *kept,
                      uint8_t *fitted);

#endif
