/* omdp record header: the first 56 bytes of every record that flows through omdp.
 *
 * One fixed, 8-byte aligned layout end to end (docs/architecture.md "Records"). The stamp block
 * carries the six hop times of a record in int64 nanoseconds of the omdp clock's epoch
 * (clock.h; the hops after `intended` read the stamp clock, stamp_clock.h, realtime or a
 * calibrated TSC); 0 means "not stamped". A record is `length` bytes long, header included,
 * and a batch is records laid back to back, each length a multiple of 8.
 */
#ifndef OMDP_RECORD_H
#define OMDP_RECORD_H

#include <stdint.h>

/* Record types. Owned here so every room agrees on the numbers. */
/* cdef: begin */
#define OMDP_RT_INVALID 0
#define OMDP_RT_OPRA_MSG 1   /* feedhandlers: one decoded OPRA message (opra_msg.h) */
#define OMDP_RT_SIGNAL 2     /* decision_engines: a signal raised by an engine */
#define OMDP_RT_BENCH 3      /* transports' microbenchmarks: opaque payload */
#define OMDP_RT_SEQ 4        /* omdp runtime tests/benchmarks: numbered, checksummed (seq_ops.h) */
#define OMDP_RT_RESHARD 5    /* omdp runtime: a re-sharding marker (reshard.h) */
/* 8: market statistics, OMDP_RT_MARKET (market_stats.h) */

/* Record flags. */
#define OMDP_RF_SAMPLED 0x1u        /* forwarded to the latency collector as a sample */
#define OMDP_RF_SIGNAL 0x2u         /* carries or caused a signal */
#define OMDP_RF_LAST_IN_PACKET 0x4u /* last message of its packet */

typedef struct omdp_stamps {
    int64_t intended; /* replayer's planned send time of the packet */
    int64_t fh_in;    /* packet arrival at the feed handler */
    int64_t fh_out;   /* record leaves the feed handler */
    int64_t de_in;    /* record enters the decision engine */
    int64_t de_out;   /* record leaves the decision engine */
    int64_t mc_in;    /* record reaches the metrics collector */
} omdp_stamps_t;

typedef struct omdp_record_header {
    uint16_t type;    /* OMDP_RT_* */
    uint16_t length;  /* whole record in bytes, header included, multiple of 8 */
    uint32_t flags;   /* OMDP_RF_* */
    omdp_stamps_t stamps;
} omdp_record_header_t;

#define OMDP_RECORD_HEADER_SIZE 56
/* cdef: end */
#define OMDP_HOP_COUNT 6

#endif /* OMDP_RECORD_H */
