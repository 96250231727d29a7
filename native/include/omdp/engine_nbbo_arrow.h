/* The engine's NBBO change log (omdp_engine_nbbo_t, engine_nbbo.h) -> the replay's NBBO
 * table columns in Arrow's layout (engine_nbbo_arrow.c).
 *
 * The replay writes every change of a day (4.4 M for a 30 s synthetic day) as a row of its
 * NBBO table (ops/spark/backtest/backtest_nbbo.py BACKTEST_NBBO_SCHEMA). Taking each field out of the
 * 80-byte records with numpy, one strided copy and conversion per column, cost about 98 ns
 * a change; this writes every column in one pass over the records (11 ns), into caller-owned
 * buffers that Python wraps as pyarrow arrays without a copy.
 *
 * Columns, for changes[0 .. n):
 *   ts_ns, msg_seq, strike_px            int64
 *   line                                 int32
 *   underlying_id, expiry, slot          uint32 (slot: the series, which the caller names)
 *   bid_px, bid_size, offer_px, offer_size  int64, valid where the side has an exchange
 *                                        (bid_part / offer_part != 0): bid_valid, offer_valid
 *   quote_part, put_call, bid_part, offer_part  int32 character codes (dictionary indices of
 *                                        the 256 one-character strings), valid where != 0:
 *                                        quote_valid, put_call_valid, bid_valid, offer_valid
 * A bitmap holds bit r of byte r / 8, LSB first, (n + 7) / 8 bytes, whole bytes written. */
#ifndef OMDP_ENGINE_NBBO_ARROW_H
#define OMDP_ENGINE_NBBO_ARROW_H

#include <stdint.h>

#include "omdp/engine_nbbo.h"

/* cdef: begin */
typedef struct omdp_nbbo_arrow_cols {
    int64_t *ts_ns;
    int32_t *line;
    int64_t *msg_seq;
    int32_t *quote_part;
    uint32_t *underlying_id;
    uint32_t *slot;
    uint32_t *expiry;
    int64_t *strike_px;
    int32_t *put_call;
    int64_t *bid_px;
    int64_t *bid_size;
    int32_t *bid_part;
    int64_t *offer_px;
    int64_t *offer_size;
    int32_t *offer_part;
    uint8_t *quote_valid;
    uint8_t *put_call_valid;
    uint8_t *bid_valid;
    uint8_t *offer_valid;
} omdp_nbbo_arrow_cols_t;
/* cdef: end */

/* Write changes[0 .. n) into cols (every pointer set, each buffer sized for n rows).
 * Returns 0, or OMDP_ENGINE_EINVAL for a NULL argument (nothing written). */
int omdp_engine_nbbo_arrow(const omdp_engine_nbbo_t *changes, uint64_t n, const omdp_nbbo_arrow_cols_t *cols);

#endif /* OMDP_ENGINE_NBBO_ARROW_H */
