/* The decision engine's hot path: quote books, NBBO, checks and signals, per message in C.
 *
 * An engine owns a group of underlyings and sees every quote of them from every participant
 * exchange of OPRA's table (spec 8.1: FAST V2's six A B C I P X and today's others). Per OPRA message record it
 *   - finds the series (root, expiry, strike, put/call) in an open-addressing hash table of
 *     preallocated slots (a full table is counted, never a crash);
 *   - on a 'k' quote updates that exchange's quote, recomputes the series' NBBO and checks it
 *     against the feed's BBO indicator and appendages (disagreements counted);
 *   - checks the quote against the series' price band (off the smile), the NBBO for crossed
 *     or locked, and the call/put pair for a put-call parity break;
 *   - forwards 1 in `sample_every` messages (a copy, flag OMDP_RF_SAMPLED) and appends a
 *     signal record (signal.h) for every anomaly, de_in and de_out stamped in what it appends.
 *
 * Pricing runs off the hot path: it reads NBBOs with omdp_engine_snapshot_series (safe from
 * another thread: per-series seqlock), computes bands and parity limits, writes them into
 * the back buffer from omdp_engine_refs_begin and publishes with omdp_engine_refs_publish.
 * The hot path switches buffers between batches, so a publish never blocks it and a batch
 * never sees a half-written buffer.
 *
 * Threads: one thread runs process_batch; snapshot, counters and the refs calls may come
 * from one other thread (the refresher) at the same time.
 */
#ifndef OMDP_ENGINE_H
#define OMDP_ENGINE_H

#include <stdint.h>
#include "omdp/opra_msg.h"
#include "omdp/record.h"
#include "omdp/signal.h"

/* cdef: begin */
#define OMDP_ENGINE_EXCHANGES 20               /* A B C D E G H I J M N P Q S T U V W X Z, in this order */
#define OMDP_ENGINE_DEFAULT_SAMPLE_EVERY 1600  /* the paper's 1 in 1,600 */
#define OMDP_ENGINE_NO_SLOT 0xFFFFFFFFu
#define OMDP_ENGINE_MAX_SIGNALS_PER_MSG 2      /* a quote raises at most a book and a parity signal */
/* Output room one message may need: its sampled copy and its signals. process_batch stops
 * before a message when less than this is left in the output buffer. */
#define OMDP_ENGINE_MAX_OUT_PER_MSG (OMDP_OPRA_MSG_SIZE + OMDP_ENGINE_MAX_SIGNALS_PER_MSG * OMDP_SIGNAL_SIZE)

/* Error codes (negative returns). */
#define OMDP_ENGINE_OK 0
#define OMDP_ENGINE_EINVAL -1     /* a NULL pointer or a capacity out of range */
#define OMDP_ENGINE_ENOMEM -2     /* allocation failed */
#define OMDP_ENGINE_EOUTSMALL -3  /* output capacity below OMDP_ENGINE_MAX_OUT_PER_MSG */
#define OMDP_ENGINE_EBUSY -4      /* refs: the hot path has not yet taken the last publish */
#define OMDP_ENGINE_ENOTBEGUN -5  /* refs_publish without a successful refs_begin */

#define OMDP_ENGINE_MAX_CAPACITY (1u << 24)   /* series or groups per engine */
#define OMDP_ENGINE_MAX_PX (1LL << 60)        /* largest price a quote may carry (~1.15e9 in units) */

typedef struct omdp_engine_config {
    uint32_t max_series;   /* series slots (1..OMDP_ENGINE_MAX_CAPACITY) */
    uint32_t max_groups;   /* (underlying, expiry) groups (1..OMDP_ENGINE_MAX_CAPACITY) */
    uint32_t sample_every; /* forward 1 in N messages; 0 forwards none */
    uint16_t engine_id;    /* written into every signal */
    uint16_t reserved;     /* zero */
} omdp_engine_config_t;

/* Counters, cumulative since create. Read with omdp_engine_read_counters from any thread. */
typedef struct omdp_engine_counters {
    uint64_t batches;          /* process_batch calls that consumed at least one message */
    uint64_t processed;        /* messages processed (every category) */
    uint64_t quotes;           /* 'k' quotes applied to a book */
    uint64_t other;            /* messages of other categories (counted, sampled, no book) */
    uint64_t bad_record;       /* not an OPRA message record (type or length): skipped */
    uint64_t bad_series;       /* quote without a valid series key (put/call, expiry, strike) */
    uint64_t bad_participant;  /* quote from a code outside OPRA's participant table */
    uint64_t bad_price;        /* quote with a price above OMDP_ENGINE_MAX_PX: that side ignored */
    uint64_t unrouted;         /* quote with underlying_id OMDP_NO_UNDERLYING */
    uint64_t table_full;       /* quote for a new series with every slot taken */
    uint64_t groups_full;      /* new series whose (underlying, expiry) group had no room */
    uint64_t series;           /* series slots in use */
    uint64_t groups;           /* groups in use */
    uint64_t sampled;          /* messages forwarded as samples */
    uint64_t signals;          /* signal records appended */
    uint64_t sig_crossed;
    uint64_t sig_locked;
    uint64_t sig_off_smile;
    uint64_t sig_parity;
    uint64_t bbo_checked;      /* quotes whose BBO indicator said something checkable */
    uint64_t bbo_bid_mismatch;   /* our NBBO bid disagrees with the feed's (price, size or exchange) */
    uint64_t bbo_offer_mismatch;
    uint64_t bbo_bad_indicator;  /* indicator not ' ' or 'A'..'P', or appendage participant unknown */
    uint64_t out_full_stops;   /* process_batch returned early for lack of output room */
    uint64_t refs_published;   /* pricing publishes taken by the hot path */
} omdp_engine_counters_t;

/* One series as pricing sees it (omdp_engine_snapshot_series): 64 bytes. Prices are
 * OMDP_PRICE_SCALE units; a missing NBBO side has price 0 and size 0. */
typedef struct omdp_engine_series_info {
    int64_t strike_px;      /*  0 */
    int64_t bid_px;         /*  8 NBBO bid */
    int64_t offer_px;       /* 16 NBBO offer */
    uint32_t bid_size;      /* 24 */
    uint32_t offer_size;    /* 28 */
    uint32_t expiry;        /* 32 YYYYMMDD */
    uint32_t underlying_id; /* 36 */
    uint32_t group;         /* 40 (underlying, expiry) group, OMDP_ENGINE_NO_SLOT if none */
    uint32_t twin;          /* 44 slot of the other leg (same root, expiry, strike), or NO_SLOT */
    uint8_t put_call;       /* 48 'C' or 'P' */
    uint8_t bid_part;       /* 49 exchange of the NBBO bid, 0 if none */
    uint8_t offer_part;     /* 50 exchange of the NBBO offer, 0 if none */
    uint8_t root_len;       /* 51 */
    char root[6];           /* 52 */
    uint8_t reserved[6];    /* 58 */
} omdp_engine_series_info_t;

/* One (underlying, expiry) group (omdp_engine_snapshot_groups). */
typedef struct omdp_engine_group_info {
    uint32_t underlying_id;
    uint32_t expiry;        /* YYYYMMDD */
} omdp_engine_group_info_t;

/* Pricing's limits for one series, read by the hot path: 32 bytes. A limit of INT64_MIN
 * (lo) or INT64_MAX (hi) disables that check.
 *   band: a quote whose bid is above band_hi or whose offer is below band_lo is off the smile.
 *   parity (on the call's slot; the put's is ignored): the synthetic forward C - P, with bid
 *   call_bid - put_offer and offer call_offer - put_bid, is broken when its bid is above
 *   parity_hi or its offer below parity_lo. */
typedef struct omdp_series_ref {
    int64_t band_lo;
    int64_t band_hi;
    int64_t parity_lo;
    int64_t parity_hi;
} omdp_series_ref_t;

/* Pricing's model for one (underlying, expiry) group: 104 bytes. The hot path uses it to give
 * a series first seen after the last refresh its limits at once (in the front buffer), so
 * the first quote of a new series is checked too. forward <= 0 disables the group. */
typedef struct omdp_group_ref {
    double forward;      /* F */
    double discount;     /* D */
    double years;        /* T */
    double smile_a;      /* sigma(k) = a + b k + c k^2, k = ln(K / F), clamped to [0.01, 5] */
    double smile_b;
    double smile_c;
    double k_min;        /* no band for a strike with k outside [k_min, k_max] */
    double k_max;
    double band_abs;     /* half-width = max(band_abs, band_rel x value, band_vol x vega) */
    double band_rel;
    double band_vol;
    double parity_tol;   /* parity band = D (F - K) +- parity_tol (dollars) */
    uint32_t has_smile;  /* 0: parity limits only */
    uint32_t reserved;
} omdp_group_ref_t;

typedef struct omdp_engine omdp_engine_t;
/* cdef: end */

/* Create an engine; NULL on error with *err set (OMDP_ENGINE_EINVAL, OMDP_ENGINE_ENOMEM).
 * Memory is allocated here, never on the hot path, as fresh zero mappings whose pages are
 * first touched where they are used (a replay task pays only for the series it sees); a live
 * user calls omdp_engine_prefault before its hot path starts. */
omdp_engine_t *omdp_engine_create(const omdp_engine_config_t *cfg, int *err);
/* Touch every page of the engine's memory now (the contents stay as they are), so the hot path
 * never takes a first-touch fault. The native engine operator and the elastic partition call it
 * where they start; before any process_batch, from the thread that owns the engine. */
void omdp_engine_prefault(omdp_engine_t *engine);
/* Let go of the engine: freed when its last owner lets go (engine_op.h: retain/release). */
void omdp_engine_destroy(omdp_engine_t *engine);

/* Process msgs[0..n) (read only; 8-byte aligned) and append output records - sampled
 * copies of messages (flag OMDP_RF_SAMPLED, plus OMDP_RF_SIGNAL when the message raised a
 * signal) and signal records, back to back, de_in and de_out stamped - to out (8-byte
 * aligned) at *out_len (updated). Returns how many messages were consumed:
 * fewer than n when the output had less than OMDP_ENGINE_MAX_OUT_PER_MSG bytes left (hand
 * the output on and call again with the rest); negative on a bad argument
 * (OMDP_ENGINE_EINVAL, or OMDP_ENGINE_EOUTSMALL when out_cap can never hold one message). */
int32_t omdp_engine_process_batch(omdp_engine_t *engine, const omdp_opra_msg_t *msgs, uint32_t n,
                                  uint8_t *out, uint32_t out_cap, uint32_t *out_len);

/* process_batch over a subset of a batch, in place: msgs[idx[0]], msgs[idx[1]], ..,
 * msgs[idx[n - 1]] in that order, every idx[j] < n_msgs (else OMDP_ENGINE_EINVAL, nothing
 * processed). Returns as process_batch (a count of the n indices). Why: the elastic
 * partition's dispatching thread runs the messages of the buckets it owns straight from the
 * input batch, one engine per bucket, without copying them (elastic.h). */
int32_t omdp_engine_process_gather(omdp_engine_t *engine, const omdp_opra_msg_t *msgs, uint32_t n_msgs,
                                   const uint32_t *idx, uint32_t n, uint8_t *out, uint32_t out_cap,
                                   uint32_t *out_len);

/* Copy the counters (relaxed atomic reads; safe from any thread). */
void omdp_engine_read_counters(const omdp_engine_t *engine, omdp_engine_counters_t *out);

/* Slots in use; slots are numbered 0..count-1 in order of first sight. */
uint32_t omdp_engine_series_count(const omdp_engine_t *engine);
uint32_t omdp_engine_group_count(const omdp_engine_t *engine);
uint32_t omdp_engine_max_series(const omdp_engine_t *engine);
/* Bytes of the engine's state, all allocated at create and never grown: the series table
 * (every slot of max_series: book, meta, dense view, both pricing buffers), its hash table,
 * the groups and theirs. A quote for a new series with every slot taken is refused and
 * counted (table_full), so memory is bounded by the configuration, not by the feed. */
uint64_t omdp_engine_state_bytes(const omdp_engine_t *engine);

/* Copy series [first, first + cap) (up to the count in use) into out; returns how many.
 * Each series' NBBO is read consistently (seqlock) while the hot path runs. */
uint32_t omdp_engine_snapshot_series(const omdp_engine_t *engine, uint32_t first,
                                     omdp_engine_series_info_t *out, uint32_t cap);
uint32_t omdp_engine_snapshot_groups(const omdp_engine_t *engine, omdp_engine_group_info_t *out,
                                     uint32_t cap);

/* Bring a snapshot up to date, reading again only the series that moved: infos[0..*n_seen)
 * is the previous call's snapshot (index = slot), seqs and twins each slot's seqlock sequence
 * and twin as of then (all three caller-owned, cap entries). A slot whose sequence or twin
 * changed since, or at or past *n_seen, is read again into infos; those that now differ in
 * a field pricing reads, and every new one, are listed in changed (cap entries, ascending).
 * Sets *n_seen to the series in use (at most cap) and returns how many were listed. The
 * test reads the engine's dense copies of the sequences and twins (8 bytes a series, in
 * order), where a snapshot copies every series: a refresh costs what moved. Start with
 * *n_seen = 0. */
uint32_t omdp_engine_snapshot_update(const omdp_engine_t *engine, omdp_engine_series_info_t *infos,
                                     uint32_t *seqs, uint32_t *twins, uint32_t cap, uint32_t *n_seen,
                                     uint32_t *changed);

/* changed[k] = 1 where now[k] and old[k] differ in a field pricing reads (strike_px, bid_px,
 * offer_px, put_call, group, twin), else 0, for k < n; returns how many differ (0 for a NULL
 * argument, nothing written). One pass over both snapshots, where comparing them field by
 * field from Python read each 64-byte record six times. */
uint32_t omdp_engine_series_priced_changed(const omdp_engine_series_info_t *now, const omdp_engine_series_info_t *old,
                                           uint32_t n, uint8_t *changed);

/* Slot of a series, or OMDP_ENGINE_NO_SLOT. root is root_len bytes (<= 6), as in the record. */
uint32_t omdp_engine_find_series(const omdp_engine_t *engine, const char *root, uint8_t root_len,
                                 uint32_t expiry, int64_t strike_px, uint8_t put_call);

/* Pricing's double buffer. begin returns the back buffer (max_series entries, every one to
 * be written) or NULL with *err = OMDP_ENGINE_EBUSY while the hot path has not yet switched
 * to the previous publish (retry on the next refresh). publish makes it the front buffer;
 * the next batch uses it. At create both buffers disable every check. */
omdp_series_ref_t *omdp_engine_refs_begin(omdp_engine_t *engine, int *err);
/* The back buffer of group models (max_groups entries, every one to be written) that goes
 * with the series limits of the current begin; NULL without a successful begin. */
omdp_group_ref_t *omdp_engine_group_refs_back(omdp_engine_t *engine);
int omdp_engine_refs_publish(omdp_engine_t *engine);

/* Index an output buffer: offsets of its sampled messages and of its signals, in order.
 * Returns the number of records seen, or -1 when a record header is malformed (a length
 * not a multiple of 8, zero, or past len); counts beyond the caps are not stored. */
int32_t omdp_engine_index_output(const uint8_t *buf, uint32_t len, uint32_t *sample_offs,
                                 uint32_t sample_cap, uint32_t *n_samples, uint32_t *signal_offs,
                                 uint32_t signal_cap, uint32_t *n_signals);

/* Book lane (exchange index) of a participant id in OPRA's table, or -1 (not a participant
 * exchange: 'O', OPRA itself, included). */
int omdp_engine_exchange_index(uint8_t participant);

const char *omdp_engine_strerror(int err);

#endif /* OMDP_ENGINE_H */
