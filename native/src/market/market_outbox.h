/* The market operators' output side (private to src/market): per-port batches of market
 * records - appended to their port's batch, which goes out through the caller's function
 * when it holds `per_batch` records and at every flush, so a batch never outgrows the
 * channel's max_message - and what both operators hand the partition (emit, counters). */
#ifndef OMDP_MARKET_OUTBOX_H
#define OMDP_MARKET_OUTBOX_H

#include <stdint.h>

#include "omdp/market_stats.h"

typedef struct mkt_outbox {
    omdp_market_rec_t *buf; /* ports x per_batch records */
    uint32_t *n;            /* records held per port */
    uint32_t ports, per_batch;
    uint64_t records, batches;
} mkt_outbox_t;

int mkt_outbox_init(mkt_outbox_t *o, uint32_t ports, uint32_t per_batch);
void mkt_outbox_free(mkt_outbox_t *o);
/* The next record of `port`'s batch (sending the batch first when it is full); NULL only
 * when that send failed, its error in *err. */
omdp_market_rec_t *mkt_outbox_next(mkt_outbox_t *o, uint32_t port, omdp_market_out_fn out, void *ctx, int *err);
/* Send every port's held records. 0 or the first error. */
int mkt_outbox_flush(mkt_outbox_t *o, omdp_market_out_fn out, void *ctx);

/* The operators' output function: records through the partition's emitter (ctx). */
int mkt_via_emit(void *ctx, uint32_t port, const uint8_t *records, uint32_t nbytes);
/* An operator's counters: the first `max` of c[0..n) copied to out; returns n. */
uint32_t mkt_counters(const omdp_counter_t *c, uint32_t n, omdp_counter_t *out, uint32_t max);

#endif /* OMDP_MARKET_OUTBOX_H */
