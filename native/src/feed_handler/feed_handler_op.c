/* The feed handler operator (feed_handler.h): init, poll, end of stream, counters (and
 * their live copy in the stats segment), close. The top of the feed handler: it drives the
 * inputs (feed_handler_input.c), which hand every packet to feed_handler_packet.c. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "omdp/clock.h"
#include "feed_handler_internal.h"

static void fh_free(feed_handler_t *fh)
{
    if (!fh)
        return;
    omdp_fh_input_close(fh);
    omdp_fh_tables_close(fh);
    omdp_fh_routes_free(fh->routes);
    free(fh->bucket_engine);
    free(fh->lines);
    free(fh->dec);
    free(fh->staging);
    free(fh->msg_engine);
    free(fh->side);
    free(fh->tables);
    free(fh);
}

static int check_params(const omdp_fh_params_t *p, const omdp_op_init_t *init)
{
    if (p->input != OMDP_FH_INPUT_RING && p->input != OMDP_FH_INPUT_MULTICAST)
        return omdp_op_init_fail(init, "input %u is neither ring (0) nor multicast (1)", p->input);
    if (p->n_lines == 0 || p->n_lines > OMDP_FH_MAX_LINE || !p->lines)
        return omdp_op_init_fail(init, "%u lines: a feed handler serves 1..%u lines", p->n_lines, OMDP_FH_MAX_LINE);
    if (p->n_engines == 0 || p->n_engines > OMDP_FH_MAX_ENGINES)
        return omdp_op_init_fail(init, "%u engines: 1..%u", p->n_engines, OMDP_FH_MAX_ENGINES);
    if (p->default_engine >= p->n_engines)
        return omdp_op_init_fail(init, "default_engine %u of %u engines", p->default_engine, p->n_engines);
    if (p->batch_packets == 0 || p->batch_packets > OMDP_FH_MAX_BATCH)
        return omdp_op_init_fail(init, "batch_packets %u: 1..%u", p->batch_packets, OMDP_FH_MAX_BATCH);
    if (p->coalesce_packets > OMDP_FH_MAX_BATCH)
        return omdp_op_init_fail(init, "coalesce_packets %u: 0..%u (0 and 1: off)", p->coalesce_packets, OMDP_FH_MAX_BATCH);
    if (p->stats_interval_ns <= 0)
        return omdp_op_init_fail(init, "stats_interval_ns must be > 0");
    if (p->input == OMDP_FH_INPUT_MULTICAST && p->receive != OMDP_FH_RECEIVE_SOCKETS &&
        p->receive != OMDP_FH_RECEIVE_PACKET_RING && p->receive != OMDP_FH_RECEIVE_XDP)
        return omdp_op_init_fail(init, "receive %u is none of sockets (0), packet_ring (1), xdp (2)", p->receive);
    if (p->format != OMDP_FH_FORMAT_FAST && p->format != OMDP_FH_FORMAT_OBI)
        return omdp_op_init_fail(init, "format %u is neither FAST V2 (0) nor OBI v6 (1)", p->format);
    if (p->input == OMDP_FH_INPUT_RING && !p->ring)
        return omdp_op_init_fail(init, "ring input without a ring");
    return OMDP_OK;
}

static int add_table(feed_handler_t *fh, const char *name)
{
    for (uint32_t t = 0; t < fh->n_tables; t++)
        if (strcmp(fh->tables[t].name, name) == 0)
            return (int)t;
    fh_table_t *tab = &fh->tables[fh->n_tables];
    snprintf(tab->name, sizeof tab->name, "%s", name);
    fh->tables_missing++;
    return (int)fh->n_tables++;
}

static int setup_lines(feed_handler_t *fh, const omdp_fh_params_t *p, const omdp_op_init_t *init)
{
    memset(fh->line_index, FH_NO_LINE, sizeof fh->line_index);
    for (uint32_t i = 0; i < p->n_lines; i++) {
        const omdp_fh_line_params_t *lp = &p->lines[i];
        fh_line_t *l = &fh->lines[i];
        if (lp->line == 0 || lp->line > OMDP_FH_MAX_LINE)
            return omdp_op_init_fail(init, "line %u outside 1..%u", lp->line, OMDP_FH_MAX_LINE);
        if (fh->line_index[lp->line] != FH_NO_LINE)
            return omdp_op_init_fail(init, "line %u given twice", lp->line);
        if (memchr(lp->intended, 0, sizeof lp->intended) == NULL)
            return omdp_op_init_fail(init, "line %u: intended table name not NUL terminated", lp->line);
        fh->line_index[lp->line] = (uint8_t)i;
        l->line = lp->line;
        l->fd[0] = p->input == OMDP_FH_INPUT_MULTICAST ? lp->fd[0] : -1;
        l->fd[1] = p->input == OMDP_FH_INPUT_MULTICAST ? lp->fd[1] : -1;
        if (p->input == OMDP_FH_INPUT_MULTICAST && l->fd[0] < 0 && l->fd[1] < 0)
            return omdp_op_init_fail(init, "line %u: multicast input without a socket", lp->line);
        l->table = lp->intended[0] ? add_table(fh, lp->intended) : -1;
        l->stats_index = -1;
        omdp_fh_arb_init(&l->arb);
        omdp_fh_obi_arb_init(&l->obi);
        if (p->obi_gap_timeout_ns)
            l->obi.gap_timeout_ns = p->obi_gap_timeout_ns; /* < 0: no timeout */
        if (fh->stats) {
            int idx = omdp_stats_line_register(fh->stats, lp->line);
            if (idx < 0)
                return omdp_op_init_fail(init, "line %u: no entry in the stats segment (error %u)", lp->line, (unsigned)-idx);
            l->stats_index = idx;
        }
    }
    return OMDP_OK;
}

/* ---- live counters ---------------------------------------------------------------------- */

/* Publish every line's counters to the stats segment when due (or always with force). */
static void publish_lines(feed_handler_t *fh, int64_t now_ns, int force)
{
    if (!fh->stats || (!force && now_ns < fh->next_publish_ns))
        return;
    fh->next_publish_ns = now_ns + fh->stats_interval_ns;
    for (uint32_t i = 0; i < fh->n_lines; i++) {
        const fh_line_t *l = &fh->lines[i];
        if (l->stats_index < 0)
            continue;
        omdp_line_counts_t c = {
            .packets_received = (int64_t)l->packets_accepted,
            .messages_received = (int64_t)(l->arb.accepted + l->obi.accepted), /* one of them is used */
            .messages_missed = (int64_t)(l->arb.missed + l->obi.missed),
            .packets_duplicate = (int64_t)l->packets_duplicate,
            .decode_errors = (int64_t)l->decode_errors,
        };
        if (omdp_stats_line_publish(fh->stats, l->stats_index, &c, now_ns) < 0)
            fh->publish_errors++;
    }
}

static int fh_init(void **state, const omdp_op_init_t *init)
{
    if (init->params_size != sizeof(omdp_fh_params_t) || !init->params)
        return omdp_op_init_fail(init, "params: expected omdp_fh_params_t");
    const omdp_fh_params_t *p = init->params;
    int rc = check_params(p, init);
    if (rc < 0)
        return rc;
    feed_handler_t *fh = calloc(1, sizeof *fh);
    if (!fh)
        return OMDP_ERR_NOMEM;
    fh->epfd = -1;
    fh->rx_fd = -1;
    fh->receive = p->input == OMDP_FH_INPUT_MULTICAST ? p->receive : OMDP_FH_RECEIVE_SOCKETS;
    fh->rx_iface_addr = p->rx_iface_addr;
    fh->rx_ring_bytes = p->rx_ring_bytes;
    memcpy(fh->xdp_ifname, p->xdp_ifname, sizeof fh->xdp_ifname);
    fh->xdp_ifname[sizeof fh->xdp_ifname - 1] = 0;
    fh->xdp_queue = p->xdp_queue;
    fh->route_found = FH_ROUTE_NONE;
    fh->input = p->input;
    fh->format = p->format;
    fh->n_lines = p->n_lines;
    fh->n_engines = p->n_engines;
    fh->default_engine = p->default_engine;
    fh->batch = p->batch_packets;
    fh->coalesce = p->coalesce_packets ? p->coalesce_packets : 1;
    fh->acc_first_engine = FH_SKIP;
    fh->ring = p->ring;
    fh->stats = p->stats;
    fh->stats_interval_ns = p->stats_interval_ns;
    fh->lines = calloc(p->n_lines, sizeof *fh->lines);
    fh->tables = calloc(p->n_lines, sizeof *fh->tables);
    fh->dec = aligned_alloc(64, FH_DEC_MSGS * sizeof(omdp_opra_msg_t));
    fh->staging = aligned_alloc(64, FH_DEC_MSGS * sizeof(omdp_opra_msg_t));
    fh->msg_engine = calloc(FH_DEC_MSGS, sizeof *fh->msg_engine);
    fh->side = malloc(FH_SIDE_BYTES);
    if (!fh->lines || !fh->tables || !fh->dec || !fh->staging || !fh->msg_engine || !fh->side) {
        fh_free(fh);
        return OMDP_ERR_NOMEM;
    }
    char err[200] = {0};
    fh->routes = omdp_fh_routes_new(p->routes, p->n_routes, p->n_engines, err, sizeof err);
    if (!fh->routes) {
        snprintf(init->err, init->err_size, "routes: %s", err);
        fh_free(fh);
        return OMDP_ERR_PARAMS;
    }
    if (p->reshard && omdp_fh_reshard_open(fh, p->reshard, init->replica, p->routes, p->n_routes, err, sizeof err) < 0) {
        snprintf(init->err, init->err_size, "reshard: %s", err);
        fh_free(fh);
        return OMDP_ERR_PARAMS;
    }
    if ((rc = setup_lines(fh, p, init)) < 0) {
        fh_free(fh);
        return rc;
    }
    if (omdp_fh_input_open(fh, err, sizeof err) < 0) {
        snprintf(init->err, init->err_size, "input: %s", err);
        fh_free(fh);
        return OMDP_ERR_PARAMS;
    }
    if (fh->stats)
        publish_lines(fh, omdp_now_ns(), 1); /* every line live from the start, at zero */
    *state = fh;
    return OMDP_OK;
}

static int fh_poll(void *state, const omdp_emitter_t *em)
{
    feed_handler_t *fh = state;
    int rc;
    if (omdp_fh_reshard_due(fh) && (rc = omdp_fh_reshard_apply(fh, em)) < 0)
        return rc;
    rc = omdp_fh_input_poll(fh, em);
    if (rc == OMDP_POLL_PRODUCED)
        fh->polls_productive++;
    /* The clock is read for the live counters only every FH_PUBLISH_POLLS polls. */
    if (fh->stats && (++fh->polls_since_clock >= FH_PUBLISH_POLLS || rc == OMDP_POLL_DONE)) {
        fh->polls_since_clock = 0;
        publish_lines(fh, omdp_now_ns(), rc == OMDP_POLL_DONE);
    }
    return rc;
}

static int fh_end_of_stream(void *state, const omdp_emitter_t *em)
{
    feed_handler_t *fh = state;
    int rc = omdp_fh_input_drain(fh, em);
    if (fh->reshard) {
        omdp_reshard_fh_ended(fh->reshard); /* no more moves; one asked for before still completes */
        if (rc >= 0 && omdp_fh_reshard_due(fh))
            rc = omdp_fh_reshard_apply(fh, em);
    }
    omdp_fh_count_tails(fh);
    if (fh->stats)
        publish_lines(fh, omdp_now_ns(), 1);
    return rc < 0 ? rc : OMDP_OK;
}

static uint32_t fh_counters(void *state, omdp_counter_t *out, uint32_t max)
{
    feed_handler_t *fh = state;
    uint64_t pk_a = 0, pk_b = 0, acc = 0, dup_pk = 0, msgs = 0, dup_msgs = 0, missed = 0, dec_err = 0, resets = 0;
    uint64_t sums = 0, retrans = 0, integrity = 0, filled = 0, timed_out = 0;
    for (uint32_t i = 0; i < fh->n_lines; i++) {
        const fh_line_t *l = &fh->lines[i];
        pk_a += l->packets[0];
        pk_b += l->packets[1];
        acc += l->packets_accepted;
        dup_pk += l->packets_duplicate;
        msgs += l->arb.accepted + l->obi.accepted; /* a handler uses one of the two arbiters */
        dup_msgs += l->arb.duplicates + l->obi.duplicates;
        missed += l->arb.missed + l->obi.missed;
        dec_err += l->decode_errors;
        resets += l->arb.resets + l->obi.resets;
        sums += l->checksum_errors;
        retrans += l->retrans_ignored;
        integrity += l->integrity;
        filled += l->obi.filled;
        timed_out += l->obi.timed_out;
    }
    omdp_counter_t c[] = {
        {"lines", fh->n_lines},
        {"packets_a", pk_a},
        {"packets_b", pk_b},
        {"packets_accepted", acc},
        {"packets_duplicate", dup_pk},
        {"messages_received", msgs},
        {"messages_duplicate", dup_msgs},
        {"messages_missed", missed},
        {"decode_errors", dec_err},
        {"resets", resets},
        {"format", fh->format},
        {"checksum_errors", sums},
        {"retrans_ignored", retrans},
        {"line_integrity", integrity},
        {"gap_filled", filled},
        {"gap_timed_out", timed_out},
        {"routed", fh->routed},
        {"no_root", fh->no_root},
        {"unknown_root", fh->unknown_root},
        {"batches_out", fh->batches_out},
        {"intended_found", fh->intended_found},
        {"intended_missing", fh->intended_missing},
        {"receive_calls", fh->receive_calls},
        {"receive_errors", fh->receive_errors},
        {"bad_frames", fh->bad_frames},
        {"unknown_line", fh->unknown_line},
        {"ring_closed", fh->ring_closed},
        {"ring_full_polls", fh->ring_full_polls},
        {"rx_ring_drops", fh->rx_ring_drops},
        {"publish_errors", fh->publish_errors},
        {"coalesce_packets", fh->coalesce},
        {"coalesce_flushes", fh->flushes},
        {"coalesce_flush_packets", fh->flush_packets},
        {"coalesce_flush_packets_max", fh->flush_packets_max},
        {"coalesce_flush_messages", fh->flush_messages},
        {"coalesce_flush_messages_max", fh->flush_messages_max},
        {"coalesce_hist_1", fh->flush_hist[0]},
        {"coalesce_hist_2", fh->flush_hist[1]},
        {"coalesce_hist_4", fh->flush_hist[2]},
        {"coalesce_hist_8", fh->flush_hist[3]},
        {"coalesce_hist_16", fh->flush_hist[4]},
        {"coalesce_hist_32", fh->flush_hist[5]},
        {"coalesce_hist_64", fh->flush_hist[6]},
        {"reshard_moves", fh->moves_applied},
        {"reshard_markers_sent", fh->markers_sent},
        {"reshard_moves_bad", fh->moves_bad},
        {"last_error_code", (uint64_t)(-(int64_t)fh->last_error.code)}, /* OMDP_OPRA_E_* or OMDP_OBI_E_* (by format)
                                                                          negated; 0: none */
    };
    uint32_t n = sizeof c / sizeof c[0];
    memcpy(out, c, (n < max ? n : max) * sizeof c[0]);
    return n;
}

static void fh_close(void *state)
{
    fh_free(state);
}

static const omdp_operator_vtable_t FEED_HANDLER = {
    .abi = OMDP_OPERATOR_ABI,
    .kind = "feed_handler",
    .n_inputs = 0,
    .n_outputs = OMDP_FH_MAX_ENGINES,
    .init = fh_init,
    .poll = fh_poll,
    .end_of_stream = fh_end_of_stream,
    .counters = fh_counters,
    .close = fh_close,
};

const omdp_operator_vtable_t *omdp_feed_handler_vtable(void) { return &FEED_HANDLER; }
