/* Vega and tcp ends as partition channels (partition_channels.h). */
#include "omdp/partition_channels.h"

#include <stdlib.h>
#include <string.h>

/* ---- vega ---------------------------------------------------------------------------- */

static int vega_poll(void *ctx, const uint8_t **data, uint32_t *len, uint64_t *slot)
{
    omdp_vega_msg_t m;
    int st = omdp_vega_try_get((omdp_vega_receiver_t *)ctx, &m);
    if (st == OMDP_VEGA_EMPTY)
        return 0;
    if (st != OMDP_VEGA_OK)
        return omdp_chan_status_to_err(st);
    *data = m.data;
    *len = m.size;
    *slot = m.slot_id;
    return 1;
}

static int vega_release(void *ctx, uint64_t slot)
{
    if (slot > UINT32_MAX)
        return OMDP_ERR_CHANNEL;
    return omdp_chan_status_to_err(omdp_vega_release((omdp_vega_receiver_t *)ctx, (uint32_t)slot));
}

static int vega_try_put(void *ctx, const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len)
{
    omdp_vega_sender_t *tx = ctx;
    if ((uint64_t)head_len + body_len > tx->max_message)
        return OMDP_ERR_TOO_BIG;
    uint8_t *dst = omdp_vega_claim(tx);
    if (!dst)
        return OMDP_CHAN_FULL;
    memcpy(dst, head, head_len);
    if (body_len)
        memcpy(dst + head_len, body, body_len);
    return omdp_chan_status_to_err(omdp_vega_commit(tx, head_len + body_len));
}

static const omdp_chan_in_ops_t VEGA_IN = {vega_poll, vega_release};
static const omdp_chan_out_ops_t VEGA_OUT = {vega_try_put};

const omdp_chan_in_ops_t *omdp_chan_vega_in_ops(void) { return &VEGA_IN; }
const omdp_chan_out_ops_t *omdp_chan_vega_out_ops(void) { return &VEGA_OUT; }

/* ---- tcp ----------------------------------------------------------------------------- */

struct omdp_chan_tcp_out {
    omdp_tcp_sender_t *tx;
    uint32_t max_message;
    uint8_t *staging;
};

static int tcp_poll(void *ctx, const uint8_t **data, uint32_t *len, uint64_t *slot)
{
    omdp_vega_msg_t m;
    int st = omdp_tcp_get((omdp_tcp_receiver_t *)ctx, &m, 0);
    if (st == OMDP_VEGA_EMPTY || st == OMDP_VEGA_TIMEOUT)
        return 0;
    if (st != OMDP_VEGA_OK)
        return omdp_chan_status_to_err(st);
    *data = m.data;
    *len = m.size;
    *slot = m.slot_id;
    return 1;
}

static int tcp_release(void *ctx, uint64_t slot)
{
    if (slot > UINT32_MAX)
        return OMDP_ERR_CHANNEL;
    return omdp_chan_status_to_err(omdp_tcp_release((omdp_tcp_receiver_t *)ctx, (uint32_t)slot));
}

static int tcp_try_put(void *ctx, const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len)
{
    omdp_chan_tcp_out_t *o = ctx;
    if ((uint64_t)head_len + body_len > o->max_message)
        return OMDP_ERR_TOO_BIG;
    memcpy(o->staging, head, head_len);
    if (body_len)
        memcpy(o->staging + head_len, body, body_len);
    int st = omdp_tcp_put(o->tx, o->staging, head_len + body_len, 0);
    if (st == OMDP_VEGA_FULL || st == OMDP_VEGA_TIMEOUT)
        return OMDP_CHAN_FULL;
    return omdp_chan_status_to_err(st);
}

omdp_chan_tcp_out_t *omdp_chan_tcp_out_new(omdp_tcp_sender_t *tx, uint32_t max_message)
{
    if (!tx || max_message == 0)
        return NULL;
    omdp_chan_tcp_out_t *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->staging = malloc(max_message);
    if (!o->staging) {
        free(o);
        return NULL;
    }
    o->tx = tx;
    o->max_message = max_message;
    return o;
}

void omdp_chan_tcp_out_free(omdp_chan_tcp_out_t *o)
{
    if (!o)
        return;
    free(o->staging);
    free(o);
}

static const omdp_chan_in_ops_t TCP_IN = {tcp_poll, tcp_release};
static const omdp_chan_out_ops_t TCP_OUT = {tcp_try_put};

const omdp_chan_in_ops_t *omdp_chan_tcp_in_ops(void) { return &TCP_IN; }
const omdp_chan_out_ops_t *omdp_chan_tcp_out_ops(void) { return &TCP_OUT; }
