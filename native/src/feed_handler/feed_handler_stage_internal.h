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
    uint64_t n_series, cap_series;
    omdp_fh_stage_extra_t *extras;
    uint64_t n_extras, cap_extras;
};

/* The id of the series whose omdp_fh_stage_series_t bytes are the three words w (entered
 * if new), or -1 when the table cannot grow. */
int64_t stage_series_id(omdp_fh_stage_tables_t *t, const uint64_t w[3]);
/* The id of a new appendage entry *x, or -1 when the table cannot grow. */
int64_t stage_extra_id(omdp_fh_stage_tables_t *t, const omdp_fh_stage_extra_t *x);

/* *s = the staged form of *m with this underlying, capture time and flags (the offline
 * feed handler's values, which it sets on its records), its series and appendage entered in
 * `t`. Returns 0; -1 when flags do not fit in a byte; -3 when a table cannot grow. */
int stage_pack_msg(omdp_fh_stage_tables_t *t, const omdp_opra_msg_t *m, uint32_t underlying_id, int64_t ts_ns,
                   uint32_t flags, omdp_fh_staged_t *s);

#endif
