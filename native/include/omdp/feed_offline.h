/* The feed handler's per-packet rules over captured packets, for the offline replay
 * (docs/analytics.md "Replay").
 *
 * A Spark task hands one line's packets - A and B copies merged in arrival order (capture
 * time, A before B on a tie: the replayer's order) - to omdp_fh_offline_line. Per packet it
 * does what feed_handler_packet.c does, with the same functions: the pre-decode duplicate
 * check by block sequence (omdp_fh_arb_packet_is_duplicate), the decode
 * (omdp_opra_decode_packet), the per-message arbitration (omdp_fh_arb_observe_block,
 * omdp_fh_arb_message), and routing by root (omdp_fh_routes_lookup; no root: the default
 * engine). Accepted messages of the wanted engine (or of every engine) are appended to the
 * caller's array with line, underlying_id, fh_in = intended = the packet's capture time,
 * var_off/var_len 0 and OMDP_RF_LAST_IN_PACKET on a packet's last accepted message; each
 * also gets its engine in `engines`. Counters per line are the live handler's.
 *
 * Every packet is read within [offsets[i], offsets[i] + lengths[i]) which must lie inside
 * buf_len (checked: a packet outside is counted bad_packets and skipped). */
#ifndef OMDP_FEED_OFFLINE_H
#define OMDP_FEED_OFFLINE_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/feed_handler.h"
#include "omdp/opra_msg.h"

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

/* NULL with err set when the routes are bad (omdp_fh_routes_new's rules), default_engine
 * >= n_engines, or memory is short. */
omdp_fh_offline_t *omdp_fh_offline_new(const omdp_fh_route_t *routes, uint32_t n_routes, uint32_t n_engines,
                                       uint32_t default_engine, char *err, size_t errlen);
void omdp_fh_offline_free(omdp_fh_offline_t *h);

/* Packets i = 0 .. n_packets-1 of line `line` (1..OMDP_FH_MAX_LINE), packet i at
 * buf[offsets[i] .. offsets[i] + lengths[i]) on copy copies[i] (0 = A, 1 = B), captured at
 * ts_ns[i]. Appends to out/engines from *n_out while room for a whole packet
 * (OMDP_OPRA_MAX_MESSAGES) is left below cap. Returns the packets consumed (fewer than
 * n_packets when out filled: call again with the rest), or -1 on a bad argument (NULL,
 * line out of range). */
int64_t omdp_fh_offline_line(omdp_fh_offline_t *h, uint32_t line, const uint8_t *buf, uint64_t buf_len,
                             const uint64_t *offsets, const uint32_t *lengths, const uint8_t *copies,
                             const int64_t *ts_ns, uint64_t n_packets, uint32_t want_engine,
                             omdp_opra_msg_t *out, uint16_t *engines, uint64_t cap, uint64_t *n_out);

/* The counters of a line so far (zero for a line never given). */
void omdp_fh_offline_line_counts(const omdp_fh_offline_t *h, uint32_t line, omdp_fh_offline_counts_t *out);

#endif /* OMDP_FEED_OFFLINE_H */
