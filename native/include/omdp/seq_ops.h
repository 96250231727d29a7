/* Generic operators over numbered records, for runtime tests and transport benchmarks.
 *
 * seq_source: emits records numbered 0, 1, 2, ... per source id, each with a checksum of
 *             (source, seq) and a fill derived from it, in batches, optionally paced.
 * relay:      forwards every batch unchanged (zero copy), counting and checking records.
 * seq_sink:   checks every record (checksum, fill, per-source order) and counts records,
 *             gaps (missing numbers), out-of-order/duplicate records and bad records.
 *
 * With these three a run is exactly accountable: every source's numbers arrive at every
 * sink it feeds, contiguous and in order, or a counter says what happened.
 */
#ifndef OMDP_SEQ_OPS_H
#define OMDP_SEQ_OPS_H

#include <stdint.h>

#include "omdp/operator.h"

/* cdef: begin */
typedef struct omdp_seq_record {
    omdp_record_header_t hdr; /* type OMDP_RT_SEQ; stamps.intended = planned emission time */
    uint32_t source;          /* source id */
    uint32_t reserved;
    uint64_t seq;             /* 0, 1, 2, ... per source */
    uint64_t check;           /* omdp_seq_check(source, seq) */
    /* then (length - 80) / 8 fill words: word k = check + k */
} omdp_seq_record_t;

#define OMDP_SEQ_RECORD_MIN 80
#define OMDP_SEQ_MAX_BATCH 4096
#define OMDP_SEQ_MAX_SOURCES 65536
/* cdef: end */

static inline uint64_t omdp_seq_check(uint32_t source, uint64_t seq)
{
    uint64_t z = ((uint64_t)source << 40) ^ seq ^ 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* cdef: begin */
typedef struct omdp_seq_source_params {
    uint64_t count;       /* records to emit, then done; 0 = until stopped */
    double rate;          /* records per second; 0 = as fast as the partition allows */
    uint32_t batch;       /* records per batch, 1 .. OMDP_SEQ_MAX_BATCH */
    uint32_t record_size; /* bytes per record: >= 80, multiple of 8, <= 65528 */
    uint32_t source_base; /* source id = source_base + replica */
    uint32_t reserved;
} omdp_seq_source_params_t;

typedef struct omdp_seq_sink_params {
    uint32_t max_sources; /* source ids 0 .. max_sources-1 are tracked; others counted bad */
    uint32_t verify_fill; /* 1: check every fill word too */
} omdp_seq_sink_params_t;
/* cdef: end */

const omdp_operator_vtable_t *omdp_seq_source_vtable(void);
const omdp_operator_vtable_t *omdp_relay_vtable(void);
const omdp_operator_vtable_t *omdp_seq_sink_vtable(void);

#endif /* OMDP_SEQ_OPS_H */
