/* The engine's NBBO-change log (docs/analytics.md "Backtest": the nbbo table).
 *
 * When a log is set, every quote that changes a series' NBBO (bid or offer: price, size or
 * exchange) appends one omdp_engine_nbbo_t - the NBBO after the quote, as the engine holds
 * it - until the log is full; further changes are counted as dropped. The backtest
 * sets a log as long as its batches (a message changes one NBBO at most, so a batch never
 * overflows it) and takes it after every omdp_engine_process_batch call. Set, take and the
 * hot path must run on one thread (the replay's); no log is set by default (the live path
 * pays one not-taken branch per NBBO change). */
#ifndef OMDP_ENGINE_NBBO_H
#define OMDP_ENGINE_NBBO_H

#include <stdint.h>

#include "omdp/engine.h"

/* One NBBO change, 80 bytes. A missing side has price 0, size 0, exchange 0. */
/* cdef: begin */
typedef struct omdp_engine_nbbo {
    int64_t ts_ns;          /*  0 the quote's hdr.stamps.fh_in (capture time offline) */
    int64_t bid_px;         /*  8 NBBO bid after the quote, OMDP_PRICE_SCALE units */
    int64_t offer_px;       /* 16 NBBO offer */
    int64_t strike_px;      /* 24 the series */
    uint64_t msg_seq;       /* 32 the quote */
    uint32_t bid_size;      /* 40 */
    uint32_t offer_size;    /* 44 */
    uint32_t expiry;        /* 48 YYYYMMDD */
    uint32_t underlying_id; /* 52 */
    uint32_t slot;          /* 56 the series' slot */
    uint16_t line;          /* 60 the quote's line */
    uint8_t bid_part;       /* 62 exchange code of the NBBO bid ('A' 'B' 'C' 'I' 'P' 'X') */
    uint8_t offer_part;     /* 63 */
    uint8_t quote_part;     /* 64 the exchange whose quote changed it */
    uint8_t put_call;       /* 65 'C' or 'P' */
    uint8_t root_len;       /* 66 */
    char root[6];           /* 67 as in the record */
    uint8_t reserved[7];    /* 73 zero */
} omdp_engine_nbbo_t;
/* cdef: end */

/* Log NBBO changes into buf[0..cap) from now on (buf NULL: stop logging); the count and the
 * dropped count start at 0. OMDP_ENGINE_EINVAL for a NULL engine or buf with cap 0. */
int omdp_engine_nbbo_log(omdp_engine_t *engine, omdp_engine_nbbo_t *buf, uint32_t cap);

/* Entries logged since the log was set or last taken (the caller reads buf[0..n)); the log
 * starts again at buf[0]. *dropped (when not NULL) gets the changes that found it full
 * since the log was set. */
uint32_t omdp_engine_nbbo_take(omdp_engine_t *engine, uint64_t *dropped);

#endif /* OMDP_ENGINE_NBBO_H */
