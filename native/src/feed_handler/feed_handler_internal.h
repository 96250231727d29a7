/* Private to the feed handler's sources: its state, shared by the operator, the inputs
 * (multicast, ring), the per-packet work (arbitration, decode, routing, emission) and the
 * intended tables. */
#ifndef OMDP_FEED_HANDLER_INTERNAL_H
#define OMDP_FEED_HANDLER_INTERNAL_H

#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "omdp/feed_handler.h"
#include "omdp/opra_fast.h"
#include "omdp/replay.h"

#define FH_NO_LINE 0xFFu
#define FH_SKIP 0xFFFFu              /* msg_engine of a message not forwarded */
#define FH_ROUTE_NONE (-2)           /* route_found before the first lookup */
#define FH_RX_BYTES 2048             /* receive buffer per datagram (an OPRA packet is <= 1456) */
#define FH_SIDE_BYTES (256u * 1024u) /* side buffer of one packet's variable parts */
#define FH_TABLE_RETRY_NS 50000000LL /* look for a missing intended table this often */
#define FH_PEER_CHECK_NS 10000000LL  /* an idle ring looks at its sender this often */
#define FH_PUBLISH_POLLS 256         /* polls between looks at the clock for live counters */
#define FH_PEER_CHECK_POLLS 64       /* idle ring polls between looks at the clock for the peer check */
#define FH_FLUSH_HIST 7              /* buckets of the packets-per-batch histogram */
#define FH_DEC_MSGS (OMDP_FH_COALESCE_MSGS + OMDP_OPRA_MAX_MESSAGES) /* room in dec and staging */

typedef struct fh_line {
    uint32_t line;
    int fd[OMDP_FH_COPIES];
    int table;                       /* index into fh->tables, -1: none */
    int stats_index;                 /* line entry in the stats segment, -1: none */
    omdp_fh_arb_t arb;               /* FAST V2 */
    omdp_fh_obi_arb_t obi;           /* OBI v6 */
    uint64_t packets[OMDP_FH_COPIES];
    uint64_t packets_accepted, packets_duplicate, decode_errors;
    uint64_t checksum_errors, retrans_ignored, integrity; /* OBI: bad checksums, 'V' blocks, H N blocks */
} fh_line_t;

/* Packet-ring receive: where a line's copy is sent (its join socket's group and port). */
typedef struct fh_rx_dest {
    uint32_t ip;                     /* group, network order */
    uint16_t port;                   /* host order */
    uint8_t line_index, copy;
} fh_rx_dest_t;

typedef struct fh_table {
    char name[OMDP_FH_TABLE_NAME];
    const omdp_replay_intended_header_t *hdr; /* NULL until the replayer made it */
    uint64_t size;
} fh_table_t;

typedef struct feed_handler {
    uint32_t input, n_lines, n_engines, default_engine, batch;
    uint32_t format;             /* OMDP_FH_FORMAT_* */
    fh_line_t *lines;
    uint8_t line_index[OMDP_FH_MAX_LINE + 1];
    omdp_fh_routes_t *routes;
    uint64_t route_key;          /* the last root looked up (its routing key) ... */
    int route_found;             /* ... and its answer; FH_ROUTE_NONE before any */
    uint32_t route_uid, route_engine;

    /* the packets held for the next output batch (one, or several with coalescing) */
    omdp_opra_msg_t *dec;        /* decoded messages, acc_n of them held */
    omdp_opra_msg_t *staging;    /* the same, grouped by engine */
    uint16_t *msg_engine;        /* per decoded message: its engine, or FH_SKIP */
    uint8_t *side;
    uint64_t packet_index;
    uint32_t coalesce;           /* packets per output batch, >= 1 */
    uint32_t acc_n, acc_packets, acc_kept, acc_first_engine, acc_mixed;
    uint32_t acc_per_engine[OMDP_FH_MAX_ENGINES];

    /* batch sizes seen: per flush of held packets */
    uint64_t flushes, flush_packets, flush_packets_max, flush_messages, flush_messages_max;
    uint64_t flush_hist[FH_FLUSH_HIST]; /* packets per flush: 1, 2, 3-4, 5-8, 9-16, 17-32, 33-64 */

    /* multicast */
    int epfd;
    struct epoll_event *events;
    uint32_t n_fds;
    struct mmsghdr *mm;
    struct iovec *iov;
    uint8_t *rxbuf;

    /* multicast through the packet ring (feed_handler_rxring.c) */
    uint32_t receive;            /* OMDP_FH_RECEIVE_* */
    uint32_t rx_iface_addr, rx_ring_bytes;
    int rx_fd;
    uint8_t *rx_map;
    size_t rx_map_bytes;
    uint32_t rx_frames, rx_next;
    fh_rx_dest_t *rx_dests;
    uint32_t n_rx_dests, rx_last_dest;
    uint64_t rx_ring_drops;
    struct fh_xdp *xdp;          /* AF_XDP receive (feed_handler_xdp.c); NULL: none */
    char xdp_ifname[OMDP_FH_XDP_IFNAME];
    uint32_t xdp_queue;

    /* ring */
    omdp_vega_receiver_t *ring;
    int64_t next_peer_check_ns;
    uint32_t idle_polls_since_clock; /* idle ring polls since the clock was last read */

    /* intended tables */
    fh_table_t *tables;
    uint32_t n_tables, tables_missing;
    int64_t next_table_try_ns;

    /* live counters */
    omdp_stats_t *stats;
    int64_t stats_interval_ns, next_publish_ns;
    uint32_t polls_since_clock;

    /* re-sharding (NULL: off): each bucket's engine, moves taken from the segment so far */
    omdp_reshard_seg_t *reshard;
    uint16_t *bucket_engine;
    uint32_t bucket_mask, fh_index, n_fh;
    uint64_t moves_applied, markers_sent, moves_bad;

    /* totals */
    uint64_t polls_productive, receive_calls, receive_errors, bad_frames, unknown_line, routed, no_root, ring_full_polls,
        unknown_root, batches_out, intended_found, intended_missing, publish_errors, ring_closed;
    omdp_opra_error_t last_error;
} feed_handler_t;

/* The sources, each using only those listed before it (and feed_handler_arb.c and
 * feed_handler_obi_arb.c and feed_handler_routes.c, which use none of them):
 *   feed_handler_intended.c <- feed_handler_packet.c (<-> feed_handler_obi.c) <- feed_handler_rxring.c <- feed_handler_xdp.c
 *   <- feed_handler_input.c
 *   <- feed_handler_reshard.c
 *   <- feed_handler_op.c */

/* feed_handler_intended.c */
/* Intended time of (line, block_seq) from the replayer's table; 0 when unknown. */
int64_t omdp_fh_intended_lookup(feed_handler_t *fh, fh_line_t *l, uint64_t block_seq);
/* The replayer's intended end of line l (replay.h): the lap's (last = 0) or the last packet's
 * (last = 1); 0 when the line has no intended table (yet). */
uint64_t omdp_fh_line_end(feed_handler_t *fh, const fh_line_t *l, int last);
/* End of stream: each line's tail short of the replayer's last intended end counted missed. */
void omdp_fh_count_tails(feed_handler_t *fh);
/* Unmap the tables attached so far. */
void omdp_fh_tables_close(feed_handler_t *fh);

/* feed_handler_packet.c: one packet of line `li` (index into fh->lines) on `copy`: held
 * for the next output batch, which leaves at once when the packets held reach the cap. */
int omdp_fh_process_packet(feed_handler_t *fh, uint32_t li, uint32_t copy, const uint8_t *pkt, uint32_t len,
                           int64_t fh_in, int64_t intended, const omdp_emitter_t *em);
/* Send the packets held (if any) to their engines: the end of every poll calls it. */
int omdp_fh_flush(feed_handler_t *fh, const omdp_emitter_t *em);

/* The low n bytes of a word (n <= 7). */
static inline uint64_t omdp_fh_low_bytes(uint32_t n) { return (1ull << (8 * n)) - 1; }

/* The routing key of a record's root, as omdp_fh_routes_lookup's byte loops make it (the
 * bytes before the first NUL of the first min(root_len, 6), trailing spaces dropped), in a
 * few word operations and no branch: on today's feed roots of every length interleave, and
 * the loops' branches missed. The 8 bytes read are root[6], wire and reserved: inside the
 * record. */
static inline uint64_t omdp_fh_record_root_key(const omdp_opra_msg_t *m)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull, lows = 0x7F7F7F7F7F7F7F7Full;
    uint64_t v;
    memcpy(&v, m->root, 8);
    v &= omdp_fh_low_bytes(m->root_len < OMDP_OPRA_ROOT_MAX ? m->root_len : OMDP_OPRA_ROOT_MAX);
    /* the first zero byte (bytes 6 and 7 are zero now, so there is one): the lowest flag of
     * the classic zero-byte test is exact */
    uint32_t n = (uint32_t)__builtin_ctzll((v - ones) & ~v & highs) >> 3;
    v &= omdp_fh_low_bytes(n);
    /* the last byte before it that is not a space: flags of the non-zero bytes of v ^ spaces */
    uint64_t y = (v ^ (0x20 * ones)) & omdp_fh_low_bytes(n);
    uint64_t t = (((y & lows) + lows) | y) & highs;
    uint32_t len = t ? (uint32_t)(63 - __builtin_clzll(t)) / 8 + 1 : 0;
    return v & omdp_fh_low_bytes(len);
}

/* Route held message m (decoded at fh->dec index `at`) of line l: its underlying and engine,
 * stamps and flags set, its engine noted in msg_engine and the per-engine counts. The
 * per-message step of both formats' packet paths. */
static inline __attribute__((always_inline)) void omdp_fh_route_message(feed_handler_t *fh, const fh_line_t *l,
                                                                        omdp_opra_msg_t *m, uint16_t *msg_engine,
                                                                        int64_t intended, int64_t fh_in,
                                                                        uint32_t *first_engine, uint32_t *mixed)
{
    uint32_t uid, e = fh->default_engine;
    int found;
    uint64_t key = omdp_fh_record_root_key(m);
    if (key == fh->route_key && fh->route_found != FH_ROUTE_NONE) {
        /* messages of one root come in runs: the last lookup answers most of them */
        found = fh->route_found;
        uid = fh->route_uid;
        e = fh->route_engine;
    } else {
        found = omdp_fh_routes_lookup_key(fh->routes, key, &uid, &e);
        if (fh->bucket_engine && found > 0)
            e = fh->bucket_engine[uid & fh->bucket_mask]; /* re-sharding: the bucket's engine now */
        fh->route_key = key;
        fh->route_found = found;
        fh->route_uid = uid;
        fh->route_engine = e;
    }
    if (found < 0) {
        fh->no_root++;
        e = fh->default_engine;
    } else if (found == 0) {
        fh->unknown_root++;
    }
    m->underlying_id = uid;
    m->line = (uint16_t)l->line;
    m->var_off = 0;
    m->var_len = 0;
    m->hdr.flags = 0;
    m->hdr.stamps.intended = intended;
    m->hdr.stamps.fh_in = fh_in;
    *msg_engine = (uint16_t)e;
    fh->acc_per_engine[e]++;
    if (*first_engine == FH_SKIP)
        *first_engine = e;
    else if (e != *first_engine)
        *mixed = 1;
}

/* After a packet's messages were routed: hold them (n decoded from fh->dec[base], kept
 * routed, `last` the index of the last kept) for the next output batch, which leaves once
 * the packets held reach the cap. */
static inline __attribute__((always_inline)) int omdp_fh_hold_packet(feed_handler_t *fh, fh_line_t *l, uint32_t base,
                                                                     uint32_t n, uint32_t kept, uint32_t last,
                                                                     uint32_t first_engine, uint32_t mixed,
                                                                     const omdp_emitter_t *em)
{
    if (kept == 0) {
        l->packets_duplicate++; /* nothing held: the next packet decodes over it */
        return OMDP_OK;
    }
    l->packets_accepted++;
    fh->routed += kept;
    fh->dec[base + last].hdr.flags |= OMDP_RF_LAST_IN_PACKET;
    fh->acc_first_engine = first_engine;
    fh->acc_mixed = mixed;
    fh->acc_n = base + n;
    fh->acc_kept += kept;
    fh->acc_packets++;
    if (fh->acc_packets >= fh->coalesce || fh->acc_n >= OMDP_FH_COALESCE_MSGS)
        return omdp_fh_flush(fh, em);
    return OMDP_OK;
}

/* feed_handler_obi.c: one OBI v6 block (omdp_fh_process_packet hands it over when the
 * handler's format is OBI). */
int omdp_fh_process_block(feed_handler_t *fh, uint32_t li, uint32_t copy, const uint8_t *pkt, uint32_t len,
                          int64_t fh_in, int64_t intended, const omdp_emitter_t *em);

/* feed_handler_rxring.c: the packet ring of the multicast input (OMDP_FH_RECEIVE_PACKET_RING) */
int omdp_fh_rxring_open(feed_handler_t *fh, char *err, size_t errlen);
void omdp_fh_rxring_close(feed_handler_t *fh);
/* Up to `batch` frames to the packet path, then a flush; *produced set when one was taken. */
int omdp_fh_rxring_poll(feed_handler_t *fh, const omdp_emitter_t *em, int *produced);
/* Add the kernel's count of frames dropped on a full ring to rx_ring_drops. */
void omdp_fh_rxring_count_drops(feed_handler_t *fh);
/* Every line copy's group and port into rx_dests (their join sockets then drop their own
 * copies); the AF_XDP input shares it (feed_handler_xdp.c). */
int omdp_fh_rxring_collect_dests(feed_handler_t *fh, char *err, size_t errlen);
/* One Ethernet frame (`snap` bytes at f, `wire` long): its UDP payload, in place, to the
 * packet path, or counted as bad / not this handler's. */
int omdp_fh_rxring_take_frame(feed_handler_t *fh, const uint8_t *f, uint32_t snap, uint32_t wire, int64_t fh_in,
                              const omdp_emitter_t *em);

/* feed_handler_input.c */
int omdp_fh_input_open(feed_handler_t *fh, char *err, size_t errlen);
void omdp_fh_input_close(feed_handler_t *fh);
/* One poll of the input: OMDP_POLL_* or a negative OMDP_ERR_*. */
int omdp_fh_input_poll(feed_handler_t *fh, const omdp_emitter_t *em);
/* Take what is still queued (end of stream), without waiting. */
int omdp_fh_input_drain(feed_handler_t *fh, const omdp_emitter_t *em);

/* Ask for the cache lines of `bytes` at `p`: an input's next packet, written on another
 * core (the replayer's, or the kernel's softirq), while this one is decoded. */
static inline void omdp_fh_prefetch_lines(const uint8_t *p, uint32_t bytes)
{
    for (uint32_t off = 0; off < bytes; off += 64)
        __builtin_prefetch(p + off, 0, 3);
}

/* feed_handler_reshard.c */
/* Set up re-sharding from the segment: each bucket's engine, checked against the routes. */
int omdp_fh_reshard_open(feed_handler_t *fh, omdp_reshard_seg_t *seg, uint32_t replica, const omdp_fh_route_t *routes,
                         uint32_t n_routes, char *err, size_t errlen);
/* Take the moves requested since the last call: a marker on both engines' ports, then the
 * bucket's new route. Call between polls (nothing held). */
int omdp_fh_reshard_apply(feed_handler_t *fh, const omdp_emitter_t *em);
/* The one check per poll: a move is waiting. */
static inline int omdp_fh_reshard_due(const feed_handler_t *fh)
{
    return fh->reshard && omdp_reshard_requested(fh->reshard) != fh->moves_applied;
}

#endif /* OMDP_FEED_HANDLER_INTERNAL_H */
