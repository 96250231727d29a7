/* Private to the replay's staged-record code (feed_handler_stage*.c): the line tables'
 * layout and their lookups. */
#ifndef OMDP_FEED_HANDLER_STAGE_INTERNAL_H
#define OMDP_FEED_HANDLER_STAGE_INTERNAL_H

#include <stdint.h>

#include "omdp/feed_stage.h"

struct omdp_fh_stage_tables {
    uint32_t *slots;           /* the series hash: ids, 0xFFFFFFFF empty; at most half full */
    uint64_t slots_mask;
    omdp_fh_stage_series_t *series;
    uint32_t *routes;          /* per series: its route (stage_route_word), STAGE_NO_ROUTE when entered by a pack */
    uint64_t n_series, cap_series;
    omdp_fh_stage_extra_t *extras;
    uint64_t n_extras, cap_extras;
};

#define STAGE_NO_ROUTE OMDP_FH_STAGE_NO_ROUTE

/* The id of the series whose omdp_fh_stage_series_t bytes are the three words w (entered
 * if new, with no route), or -1 when the table cannot grow. The hash leaves out the
 * underlying id (w[1]'s high half): a series' underlying follows from its root. */
int64_t stage_series_id(omdp_fh_stage_tables_t *t, const uint64_t w[3]);

/* A route as one word: the engine (below 2^24) and routing's answer for the root (found:
 * -1 no root, 0 unknown root, 1 routed) in the top byte. */
static inline uint32_t stage_route_word(uint32_t engine, int found)
{
    return (engine & 0xFFFFFFu) | (uint32_t)(found + 1) << 24;
}

/* The offline feed handler's lookup, series first: the id of the series whose words are w
 * except the underlying id (w[1]'s high half, which routing gives), entered with a route by
 * stage_series_set_route, and *route its route word; -1 when there is none yet (route the
 * root, enter the series with stage_series_id, then set its route). */
int64_t stage_series_routed(const omdp_fh_stage_tables_t *t, const uint64_t w[3], uint32_t *route);
/* Sets the route of series `id` (below n_series). */
void stage_series_set_route(omdp_fh_stage_tables_t *t, uint64_t id, uint32_t route);
/* The id of a new appendage entry *x, or -1 when the table cannot grow. */
int64_t stage_extra_id(omdp_fh_stage_tables_t *t, const omdp_fh_stage_extra_t *x);

/* The series entry of *m with this underlying as the three words stage_series_id takes. */
void stage_series_words(const omdp_opra_msg_t *m, uint32_t underlying_id, uint64_t w[3]);

/* *s = the staged form of *m as series `series` (an id of `t`), with this capture time and
 * flags, its appendage entered in `t`. Returns 0; -1 when flags do not fit in a byte; -3
 * when the appendage table cannot grow. */
int stage_pack_series(omdp_fh_stage_tables_t *t, const omdp_opra_msg_t *m, uint32_t series, int64_t ts_ns,
                      uint32_t flags, omdp_fh_staged_t *s);

/* *s = the staged form of *m with this underlying, capture time and flags (the offline
 * feed handler's values, which it sets on its records), its series and appendage entered in
 * `t`. Returns 0; -1 when flags do not fit in a byte; -3 when a table cannot grow. */
int stage_pack_msg(omdp_fh_stage_tables_t *t, const omdp_opra_msg_t *m, uint32_t underlying_id, int64_t ts_ns,
                   uint32_t flags, omdp_fh_staged_t *s);

#endif
