/* Per-port batches of market records: see market_outbox.h. */
#include "market_outbox.h"

#include <stdlib.h>
#include <string.h>

int mkt_outbox_init(mkt_outbox_t *o, uint32_t ports, uint32_t per_batch)
{
    memset(o, 0, sizeof *o);
    o->buf = calloc((size_t)ports * per_batch, sizeof *o->buf);
    o->n = calloc(ports, sizeof *o->n);
    if (!o->buf || !o->n) {
        mkt_outbox_free(o);
        return OMDP_ERR_NOMEM;
    }
    o->ports = ports;
    o->per_batch = per_batch;
    return OMDP_OK;
}

void mkt_outbox_free(mkt_outbox_t *o)
{
    free(o->buf);
    free(o->n);
    o->buf = NULL;
    o->n = NULL;
}

static int send_port(mkt_outbox_t *o, uint32_t port, omdp_market_out_fn out, void *ctx)
{
    uint32_t n = o->n[port];
    if (n == 0)
        return OMDP_OK;
    o->n[port] = 0;
    o->batches++;
    return out(ctx, port, (const uint8_t *)(o->buf + (size_t)port * o->per_batch), n * OMDP_MARKET_REC_SIZE);
}

omdp_market_rec_t *mkt_outbox_next(mkt_outbox_t *o, uint32_t port, omdp_market_out_fn out, void *ctx, int *err)
{
    if (o->n[port] == o->per_batch) {
        int r = send_port(o, port, out, ctx);
        if (r < 0) {
            *err = r;
            return NULL;
        }
    }
    o->records++;
    return o->buf + (size_t)port * o->per_batch + o->n[port]++;
}

int mkt_outbox_flush(mkt_outbox_t *o, omdp_market_out_fn out, void *ctx)
{
    for (uint32_t p = 0; p < o->ports; p++) {
        int r = send_port(o, p, out, ctx);
        if (r < 0)
            return r;
    }
    return OMDP_OK;
}

int mkt_via_emit(void *ctx, uint32_t port, const uint8_t *records, uint32_t nbytes)
{
    return omdp_emit((const omdp_emitter_t *)ctx, port, records, nbytes);
}

uint32_t mkt_counters(const omdp_counter_t *c, uint32_t n, omdp_counter_t *out, uint32_t max)
{
    for (uint32_t i = 0; i < n && i < max; i++)
        out[i] = c[i];
    return n;
}
