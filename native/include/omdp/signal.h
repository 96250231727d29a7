/* The signal record: one anomaly a decision engine found, 152 bytes.
 *
 * Owned by decision_engines (Python reads it as decision_engines.signal_record.SIGNAL_DTYPE,
 * built from this struct). It starts with the omdp record header (type OMDP_RT_SIGNAL,
 * flags OMDP_RF_SIGNAL) whose stamp block is copied from the message that raised the
 * signal, de_out set when the signal leaves the engine - so a signal's latency is measured
 * like a sampled message's. The body names the series, says what was checked against what
 * and how far beyond the limit it was; it carries what runs/<...>/signals.parquet stores.
 */
#ifndef OMDP_SIGNAL_H
#define OMDP_SIGNAL_H

#include <stdint.h>
#include "omdp/record.h"

/* Signal kinds. Built-in engines use 1..4; custom engines use OMDP_SIG_CUSTOM and up. */
/* cdef: begin */
#define OMDP_SIG_CROSSED 1    /* NBBO bid > NBBO offer (was neither crossed nor locked) */
#define OMDP_SIG_LOCKED 2     /* NBBO bid == NBBO offer (was neither crossed nor locked) */
#define OMDP_SIG_OFF_SMILE 3  /* a quote outside its series' price band from the smile */
#define OMDP_SIG_PARITY 4     /* call - put outside D(F - K) +- tolerance (entered broken) */
#define OMDP_SIG_CUSTOM 128   /* first kind free for custom engines */

#define OMDP_SIGNAL_SIZE 152

typedef struct omdp_signal {
    omdp_record_header_t hdr; /*   0 stamps of the message that raised it; de_out on leaving */
    uint64_t block_seq;       /*  56 of the message that raised it */
    uint64_t msg_seq;         /*  64 of the message that raised it */
    int64_t strike_px;        /*  72 series strike, OMDP_PRICE_SCALE units */
    int64_t bid_px;           /*  80 what was checked, bid side (see below) */
    int64_t offer_px;         /*  88 what was checked, offer side */
    int64_t ref_lo;           /*  96 the limits it was checked against (see below) */
    int64_t ref_hi;           /* 104 */
    double value;             /* 112 how far beyond the limit, in price units (1.0 = $1) */
    uint32_t time;            /* 120 message time HHMMSSmmm */
    uint32_t expiry;          /* 124 YYYYMMDD */
    uint32_t underlying_id;   /* 128 */
    uint16_t line;            /* 132 OPRA line of the message */
    uint16_t engine;          /* 134 engine id from its configuration */
    uint8_t kind;             /* 136 OMDP_SIG_* */
    uint8_t put_call;         /* 137 'C' or 'P' (parity: the leg whose quote raised it) */
    uint8_t participant;      /* 138 exchange whose quote raised it */
    uint8_t root_len;         /* 139 */
    char root[6];             /* 140 option root, NUL padded */
    uint8_t bid_part;         /* 146 crossed/locked: exchange of the NBBO bid, else 0 */
    uint8_t offer_part;       /* 147 crossed/locked: exchange of the NBBO offer, else 0 */
    uint8_t reserved[4];      /* 148 zero */
} omdp_signal_t;
/* cdef: end */

/* What bid_px/offer_px and ref_lo/ref_hi hold, per kind:
 *   CROSSED, LOCKED: the NBBO bid and offer after the quote; refs 0; value bid - offer.
 *   OFF_SMILE: the quote's own bid and offer (0 for a missing side); refs the band
 *              [lo, hi]; value how far the bid is above hi or the offer below lo.
 *   PARITY: the synthetic forward's bid (call bid - put offer) and offer (call offer -
 *           put bid); refs the band [D(F-K) - tol, D(F-K) + tol]; value how far outside.
 */

#endif /* OMDP_SIGNAL_H */
