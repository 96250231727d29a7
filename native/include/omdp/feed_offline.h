/* The feed handler's per-packet rules over captured packets, for the backtest
 * (docs/analytics.md "Backtest").
 *
 * A Spark task hands a day's packets (FAST V2, or OBI v6 after omdp_fh_offline_set_format) - every line, A and B copies, merged in arrival order
 * (capture time, then line, then A before B: the replayer's order) - to
 * omdp_fh_offline_run, which writes the accepted records in that order. Per packet it
 * does what feed_handler_packet.c does, with the same functions: the pre-decode duplicate
 * check by block sequence (omdp_fh_arb_packet_is_duplicate), the decode
 * (omdp_opra_decode_packet), the per-message arbitration (omdp_fh_arb_observe_block,
 * omdp_fh_arb_message), and routing by root (omdp_fh_routes_lookup; no root: the default
 * engine). Accepted messages of the wanted engine (or of every engine) are appended to the
 * caller's array with line, underlying_id, fh_in = intended = the packet's capture time,
 * var_off/var_len 0 and OMDP_RF_LAST_IN_PACKET on a packet's last accepted message; each
 * also gets its engine in `engines`. Counters per line are the live handler's.
 *
 * A packet names its source buffer (a capture file's memory map) and is read within
 * [off, off + len) of it, which must lie inside the source (checked: a packet outside, or
 * naming no source, is counted bad_packets and skipped). */
#ifndef OMDP_FEED_OFFLINE_H
#define OMDP_FEED_OFFLINE_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/feed_handler.h"
#include "omdp/feed_stage.h"
#include "omdp/opra_msg.h"

/* cdef: begin */
#define OMDP_FH_OFFLINE_ALL 0xFFFFFFFFu /* want_engine: keep every engine's messages */

typedef struct omdp_fh_offline_counts {
    uint64_t packets[OMDP_FH_COPIES];   /* packets seen per copy */
    uint64_t packets_accepted;          /* packets with at least one accepted message */
    uint64_t packets_duplicate;         /* packets wholly behind (before or after decoding) */
    uint64_t decode_errors;             /* packets the codec refused */
    uint64_t bad_packets;               /* packets outside the buffer */
    uint64_t accepted;                  /* messages accepted (arbiter) */
    uint64_t duplicates;                /* messages skipped as already seen (arbiter) */
    uint64_t missed;                    /* sequence numbers skipped over (arbiter) */
    uint64_t resets;                    /* resets honoured (arbiter) */
    uint64_t kept;                      /* accepted messages of the wanted engine, written out */
    uint64_t no_root;                   /* accepted messages without a root (default engine) */
    uint64_t unknown_root;              /* accepted messages whose root is not in the table */
} omdp_fh_offline_counts_t;

typedef struct omdp_fh_offline omdp_fh_offline_t;
/* cdef: end */

/* NULL with err set when the routes are bad (omdp_fh_routes_new's rules), default_engine
 * >= n_engines, or memory is short. */
omdp_fh_offline_t *omdp_fh_offline_new(const omdp_fh_route_t *routes, uint32_t n_routes, uint32_t n_engines,
                                       uint32_t default_engine, char *err, size_t errlen);
void omdp_fh_offline_free(omdp_fh_offline_t *h);
/* The packets' format, OMDP_FH_FORMAT_FAST (the default) or OMDP_FH_FORMAT_OBI: OBI blocks
 * are arbitrated as feed_handler_obi.c does (spec 9.2). Set before the first packet. 0, or
 * -1 for an unknown format. */
int omdp_fh_offline_set_format(omdp_fh_offline_t *h, uint32_t format);

/* A source buffer: one capture file's bytes. */
/* cdef: begin */
typedef struct omdp_fh_offline_src {
    const uint8_t *buf;
    uint64_t len;
} omdp_fh_offline_src_t;

/* One packet: where it is, its line and copy, its capture time. 24 bytes. */
typedef struct omdp_fh_offline_pkt {
    uint64_t off;      /* in its source */
    uint32_t len;
    uint16_t src;      /* index into the sources */
    uint8_t line;      /* 1..OMDP_FH_MAX_LINE */
    uint8_t copy;      /* 0 = A, 1 = B */
    int64_t ts_ns;
} omdp_fh_offline_pkt_t;
/* cdef: end */

/* Packets pkts[0 .. n_packets) in arrival order. Appends to out/engines from *n_out while
 * room for a whole packet (OMDP_OPRA_MAX_MESSAGES) is left below cap. Returns the packets
 * consumed (fewer than n_packets when out filled: call again with the rest), or -1 on a
 * bad argument (NULL). A packet whose line is 0 or above OMDP_FH_MAX_LINE is bad_packets of
 * line 0 (omdp_fh_offline_line_counts(h, 0, ...)). */
int64_t omdp_fh_offline_run(omdp_fh_offline_t *h, const omdp_fh_offline_src_t *srcs, uint32_t n_srcs,
                            const omdp_fh_offline_pkt_t *pkts, uint64_t n_packets, uint32_t want_engine,
                            omdp_opra_msg_t *out, uint16_t *engines, uint64_t cap, uint64_t *n_out);

/* One bucket's output region for omdp_fh_offline_stage: out[0 .. cap), n records in it. */
/* cdef: begin */
typedef struct omdp_fh_stage_region {
    omdp_fh_staged_t *out;
    uint64_t cap;
    uint64_t n;
} omdp_fh_stage_region_t;

/* Staged output (feed_stage.h): one region per engine (bucket), the line's tables. */
typedef struct omdp_fh_offline_stage {
    omdp_fh_stage_tables_t *tables;
    omdp_fh_stage_region_t *regions;
    uint32_t n_regions;                 /* at least the routes' n_engines */
} omdp_fh_offline_stage_t;
/* cdef: end */

/* omdp_fh_offline_run's rules over every engine's messages, each accepted message packed
 * straight into its engine's region in the staged form (no full record is written): the
 * backtest's decode stage. Appends at regions[e].n while every region has room for a
 * whole packet. Returns the packets consumed (fewer than n_packets when a region filled:
 * empty the regions and call again with the rest); -1 on a bad argument (NULL, fewer
 * regions than engines, a region without memory); -3 when the tables cannot grow (the
 * packet in hand is then partly staged). */
int64_t omdp_fh_offline_stage(omdp_fh_offline_t *h, const omdp_fh_offline_src_t *srcs, uint32_t n_srcs,
                              const omdp_fh_offline_pkt_t *pkts, uint64_t n_packets, omdp_fh_offline_stage_t *st);

/* The counters of a line so far (zero for a line never given; line 0: packets of no line). */
void omdp_fh_offline_line_counts(const omdp_fh_offline_t *h, uint32_t line, omdp_fh_offline_counts_t *out);

#endif /* OMDP_FEED_OFFLINE_H */
