/* omdp latency collector core: the last hop of every sampled record.
 *
 * Why in C: the collector sees every forwarded record of the run; per-record work (stamp
 * mc_in, six hop differences, histogram updates, one sample row) stays in C and Python
 * crosses in once per batch. The collector knows nothing of the record body: the caller
 * describes where the identity fields of a sample sit in its record type (offset and
 * width, taken from the body's numpy dtype), and each batch says which upstream source
 * (engine) it came from.
 *
 * The final stamp, mc_in, is taken once per batch and kept in the sample rows.
 *
 * Hops (docs/architecture.md "Rates, latency, sustainability"), from the stamp block:
 *   OMDP_LAT_FH           fh_out - fh_in
 *   OMDP_LAT_TO_DE        de_in  - fh_out
 *   OMDP_LAT_DE           de_out - de_in
 *   OMDP_LAT_TO_MC        mc_in  - de_out
 *   OMDP_LAT_E2E          mc_in  - fh_in     (end to end from packet arrival)
 *   OMDP_LAT_E2E_INTENDED mc_in  - intended  (end to end from the planned send)
 * A hop whose stamps are not both set (0 = not stamped) is not recorded; it is counted in
 * `missing[hop]`. Negative differences are recorded as 0 and counted by the histogram.
 *
 * Samples: OMDP_LAT_SELECT_FLAGGED takes the records carrying OMDP_RF_SAMPLED (the engine
 * sampled them); OMDP_LAT_SELECT_EVERY_N takes 1 in `sample_every` of the candidate
 * records, counting from the first. Candidates are records of `record_type` (0 = any).
 * Every sample goes into the live histograms (cumulative and current second) and, while
 * fewer than `max_rows` rows are kept, one row of the columnar sample buffer (stamps +
 * identity) for samples.parquet; rows past the cap are counted in `rows_dropped`.
 *
 * Live publication: with a stats segment attached, the cumulative histograms and the current
 * second's are published at most every `publish_interval_ns` (checked once per batch) and
 * whenever the second rolls over, plus on omdp_latency_publish.
 */
#ifndef OMDP_COLLECTOR_H
#define OMDP_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/histogram.h"
#include "omdp/record.h"
#include "omdp/stats.h"

/* cdef: begin */
#define OMDP_LAT_FH 0
#define OMDP_LAT_TO_DE 1
#define OMDP_LAT_DE 2
#define OMDP_LAT_TO_MC 3
#define OMDP_LAT_E2E 4
#define OMDP_LAT_E2E_INTENDED 5
#define OMDP_LAT_HOPS 6

#define OMDP_LAT_SELECT_FLAGGED 0
#define OMDP_LAT_SELECT_EVERY_N 1

/* Errors of the batch walk (negative returns). */
#define OMDP_LAT_EINVAL (-22)    /* bad argument */
#define OMDP_LAT_ENOMEM (-12)    /* the sample buffer could not grow */
#define OMDP_LAT_EBADREC (-74)   /* a record's length runs outside the batch or is not a multiple of 8 */

/* Where one identity field sits in a record: byte offset from the record start and width
 * (0 = absent -> 0; 1, 2, 4 or 8 bytes, little-endian unsigned). */
typedef struct omdp_id_field {
    uint16_t offset;
    uint16_t size;
} omdp_id_field_t;

typedef struct omdp_sample_id_layout {
    omdp_id_field_t line;       /* feed line */
    omdp_id_field_t block_seq;  /* packet sequence number on its line */
    omdp_id_field_t msg_seq;    /* message sequence number */
    omdp_id_field_t engine;     /* absent: the batch's `source` */
    omdp_id_field_t key;        /* routing key (samples.parquet: underlying_id) */
    omdp_id_field_t category;   /* record category of its feed */
} omdp_sample_id_layout_t;

/* One sample's identity, as pre-extracted rows hand it in (omdp_latency_collect_rows). */
typedef struct omdp_sample_id {
    uint64_t block_seq;
    uint64_t msg_seq;
    uint32_t key;
    uint16_t line;
    uint16_t engine;
    uint8_t category;
    uint8_t reserved[7];
} omdp_sample_id_t;

typedef struct omdp_latency_config {
    uint32_t select;              /* OMDP_LAT_SELECT_* */
    uint32_t sample_every;        /* N of EVERY_N (>= 1); recorded as the run's knob either way */
    uint16_t record_type;         /* candidates' type; 0 = any */
    uint16_t reserved[3];
    uint64_t max_rows;            /* rows kept for samples.parquet */
    int64_t publish_interval_ns;  /* live publication period; 0 = only on rollover and request */
    omdp_sample_id_layout_t id;
} omdp_latency_config_t;

typedef struct omdp_latency_counters {
    uint64_t batches;
    uint64_t records;             /* records walked */
    uint64_t samples;             /* records taken as samples */
    uint64_t not_sampled;         /* candidates or other records not taken */
    uint64_t bad_batches;         /* batches cut short by a bad record length */
    uint64_t id_out_of_bounds;    /* identity fields past a record's end (read as 0) */
    uint64_t rows;                /* rows kept */
    uint64_t rows_dropped;        /* samples past max_rows */
    uint64_t publishes;
    uint64_t publish_errors;      /* stats segment writes that failed (EBUSY) */
    int64_t last_error_offset;    /* byte offset in its batch of the last bad record, -1 if none */
    uint64_t missing[OMDP_LAT_HOPS];
} omdp_latency_counters_t;

/* Column pointers of a sample buffer (the collector's, or caller-owned arrays). */
typedef struct omdp_sample_columns {
    int64_t *intended;
    int64_t *fh_in;
    int64_t *fh_out;
    int64_t *de_in;
    int64_t *de_out;
    int64_t *mc_in;
    uint16_t *line;
    uint64_t *block_seq;
    uint64_t *msg_seq;
    uint16_t *engine;
    uint32_t *key;
    uint8_t *category;
    size_t rows;
} omdp_sample_columns_t;

typedef struct omdp_latency_collector omdp_latency_collector_t;
/* cdef: end */

/* Validate cfg (selection, N >= 1, identity widths) and allocate; NULL on a bad config. */
omdp_latency_collector_t *omdp_latency_collector_new(const omdp_latency_config_t *cfg);
void omdp_latency_collector_free(omdp_latency_collector_t *c);
/* Publish live figures into s (not owned; NULL detaches). op_index >= 0: also publish the
 * collector's counters into that operator entry (registered with OMDP_LAT_OP_COUNTERS). */
int omdp_latency_attach_stats(omdp_latency_collector_t *c, omdp_stats_t *s, int op_index);
/* Counter names for the operator entry, in publication order. */
#define OMDP_LAT_OP_COUNTERS "records,samples,not_sampled,bad_batches,rows,rows_dropped"
/* OMDP_LAT_OP_COUNTERS for callers that cannot see C macros. */
const char *omdp_latency_op_counter_names(void);

/* Walk a batch of back-to-back records (each `length` bytes, a multiple of 8, header
 * first; any alignment). mc_in = 0: read the clock once for the batch (the records of a
 * batch arrive together). The batch is only read: mc_in goes into the sample rows and
 * histograms, not into the records (a batch is lent read-only, operator.h). Returns the
 * samples taken, or OMDP_LAT_EBADREC after collecting the records before the bad one
 * (counted, offset in counters.last_error_offset), or OMDP_LAT_EINVAL. */
int64_t omdp_latency_collect_batch(omdp_latency_collector_t *c, const void *batch, size_t nbytes, uint16_t source,
                                   int64_t mc_in);
/* Collect n pre-extracted samples (stamps with mc_in set, identities; ids may be NULL for
 * zeros). Every row is a sample (no selection). Returns n or an error. */
int64_t omdp_latency_collect_rows(omdp_latency_collector_t *c, const omdp_stamps_t *stamps,
                                  const omdp_sample_id_t *ids, size_t n);
/* Publish to the attached segment now (heartbeat included). 0, or an error. */
int omdp_latency_publish(omdp_latency_collector_t *c, int64_t now_ns);

const omdp_latency_counters_t *omdp_latency_counters(const omdp_latency_collector_t *c);
/* Cumulative live histogram of hop (OMDP_LAT_*); NULL for a bad hop. */
const omdp_hist_t *omdp_latency_hist(const omdp_latency_collector_t *c, int hop);
/* Pointers to the kept rows; valid until the next collect call or free. */
int omdp_latency_columns(const omdp_latency_collector_t *c, omdp_sample_columns_t *out);
/* Forget the first n kept rows (written out by the caller: samples.parquet in chunks), the rest
 * moved to the front; the columns' allocation is kept. Returns the rows left, -1 on a NULL c. */
int64_t omdp_latency_discard_rows(omdp_latency_collector_t *c, size_t n);

/* Bounded memory when a C loop feeds the collector and another thread writes the rows out:
 * with chunk_rows > 0, each time chunk_rows rows are kept and no chunk is waiting, the kept
 * columns become the waiting chunk and the collector starts new ones (0: off, the default).
 * Call before the loop starts. */
int omdp_latency_set_handoff(omdp_latency_collector_t *c, size_t chunk_rows);
/* From any one reader thread, while the loop runs: take the waiting chunk into out (the
 * caller then owns its columns: omdp_latency_free_columns). Returns its rows, 0 if none. */
int64_t omdp_latency_take_chunk(omdp_latency_collector_t *c, omdp_sample_columns_t *out);
/* Free the columns of a chunk taken with omdp_latency_take_chunk. */
void omdp_latency_free_columns(omdp_sample_columns_t *cols);

/* Histograms of the hops of rows [start, end) of cols (only the six stamp columns are
 * read); out[OMDP_LAT_HOPS] is added to, missing[OMDP_LAT_HOPS] (may be NULL) too.
 * The same arithmetic as the live path: used for the paper's middle-100,000 report and to
 * rebuild a finished run's breakdown from samples.parquet. */
int omdp_latency_hists_from_columns(const omdp_sample_columns_t *cols, size_t start, size_t end, omdp_hist_t *out,
                                    uint64_t *missing);

#endif /* OMDP_COLLECTOR_H */
