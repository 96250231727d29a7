/* Re-sharding between engine partitions: moving an underlying bucket from one decision
 * engine to another at run time, with no master in the data path (docs/engines.md
 * "Re-sharding between engines").
 *
 * A bucket is underlying_id % buckets (a power of two). The run's **reshard segment**
 * (POSIX shm `omdp-<run>-reshard`, created by the run, opened by every feed handler and
 * engine and by `omdp reshard`) holds
 *   - the move log: a trigger (omdp_reshard_request) claims the next move id, writes
 *     (bucket, to) and publishes it; one move is in flight at a time;
 *   - each bucket's home engine (the routing table's, at create) and current owner;
 *   - the hand-over area: the bucket's state, written by the engine giving it up and read
 *     by the engine taking it.
 *
 * The protocol (AIR-style: a point in each feed handler's own stream):
 *   1. each feed handler, between two polls, sees the request, emits a marker record
 *      (omdp_reshard_marker_t, below) on the old engine's port and then on the new one's,
 *      and from then on routes the bucket to the new engine;
 *   2. the old engine, once it has the marker of every feed handler, has processed every
 *      message of the bucket it will ever get: it exports the bucket's series (books,
 *      NBBO, crossed/locked state: omdp_reshard_series_t) into the hand-over area and
 *      publishes the move id (release);
 *   3. the new engine holds back the bucket's messages from the first marker it sees until
 *      the exported state is there (acquire), installs it, runs the held messages in
 *      order, then takes the bucket's messages as they come.
 * Every other bucket keeps flowing throughout; nothing waits for a stop.
 */
#ifndef OMDP_RESHARD_H
#define OMDP_RESHARD_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/record.h"

/* cdef: begin */
#define OMDP_RESHARD_MAX_BUCKETS 4096
#define OMDP_RESHARD_MAX_ENGINES 64     /* = OMDP_FH_MAX_ENGINES */
#define OMDP_RESHARD_MAX_FH 64          /* feed handlers: a marker's fh is a bit of a 64-bit mask */
#define OMDP_RESHARD_LOG 1024           /* moves remembered (id % OMDP_RESHARD_LOG) */
#define OMDP_RESHARD_NO_OWNER 0xFFFFu

/* Errors (negative). */
#define OMDP_RESHARD_EINVAL (-1)   /* a bad argument: bucket, engine, name, sizes */
#define OMDP_RESHARD_EBUSY (-2)    /* a move is in flight: one at a time */
#define OMDP_RESHARD_ESAME (-3)    /* the bucket is already on that engine */
#define OMDP_RESHARD_ESYS (-4)     /* shm_open, ftruncate or mmap failed (errno kept) */
#define OMDP_RESHARD_EFORMAT (-5)  /* the segment is not a reshard segment of this version */
#define OMDP_RESHARD_EENDED (-6)   /* a feed handler's stream has ended: no more moves */

/* The marker a feed handler emits on both engines' ports at its switch point: 96 bytes. */
typedef struct omdp_reshard_marker {
    omdp_record_header_t hdr; /*  0 type OMDP_RT_RESHARD, length 96 */
    uint64_t move_id;         /* 56 1, 2, ... (the segment's log) */
    uint64_t fh_packets;      /* 64 the feed handler's sequence point: packets decoded before it */
    uint64_t fh_messages;     /* 72 and messages routed before it */
    uint32_t bucket;          /* 80 */
    uint32_t buckets;         /* 84 */
    uint16_t from;            /* 88 engine giving the bucket up */
    uint16_t to;              /* 90 engine taking it */
    uint16_t fh;              /* 92 the feed handler (0 .. n_fh-1) */
    uint16_t n_fh;            /* 94 feed handlers in the run: markers the old engine waits for */
} omdp_reshard_marker_t;

#define OMDP_RESHARD_MARKER_SIZE 96

/* One series of a bucket in the hand-over area: 584 bytes, the engine's whole view of it.
 * The quote arrays hold OMDP_ENGINE_EXCHANGES (engine.h) exchanges, in its lane order. */
typedef struct omdp_reshard_series {
    uint64_t k0, k1;          /*   0 the engine's series key (root | expiry code, strike | put) */
    int64_t strike_px;        /*  16 */
    int64_t bid[20];          /*  24 each exchange's quote (OPRA's participants); INT64_MIN: none */
    int64_t ask[20];          /* 184 INT64_MAX: none */
    uint32_t bid_sz[20];      /* 344 */
    uint32_t ask_sz[20];      /* 424 */
    int64_t nb_px, no_px;     /* 504 NBBO */
    uint32_t nb_sz, no_sz;    /* 520 */
    uint32_t expiry;          /* 528 YYYYMMDD */
    uint32_t underlying_id;   /* 532 */
    uint8_t nb_ex, no_ex;     /* 536 exchange index of the NBBO sides, 0xFF: none */
    uint8_t state;            /* 538 crossed / locked / parity bits */
    uint8_t put_call;         /* 539 */
    uint8_t root_len;         /* 540 */
    char root[6];             /* 541 */
    uint8_t reserved[5];      /* 547 zero */
    int64_t band_lo, band_hi; /* 552 pricing's limits in force for it (omdp_series_ref_t), so the */
    int64_t parity_lo;        /* 568 new engine checks its quotes at once, as the old one did, */
    int64_t parity_hi;        /* 576 until its own pricing refreshes them */
} omdp_reshard_series_t;

#define OMDP_RESHARD_SERIES_SIZE 584

/* What the hand-over area starts with; n_series omdp_reshard_series_t follow. */
typedef struct omdp_reshard_handover {
    uint64_t move_id;
    uint32_t bucket;
    uint32_t n_series;        /* UINT32_MAX: the state did not fit (the move completes without it, counted) */
} omdp_reshard_handover_t;

/* One move of the log, as omdp_reshard_move_info copies it: 80 bytes. Times: omdp clock ns. */
typedef struct omdp_reshard_move {
    uint64_t id;              /* 0: not (yet) in the log */
    uint32_t bucket, to;      /* the request */
    uint32_t from;            /* written by the old engine at export */
    uint32_t n_series;        /* series handed over */
    int64_t requested_ns;     /* the trigger */
    int64_t exported_ns;      /* the old engine published the state */
    int64_t installed_ns;     /* the new engine installed it */
    uint64_t state_bytes;     /* hand-over bytes */
    uint64_t held;            /* messages the new engine held back */
    int64_t hold_ns;          /* from its first marker to the install */
    uint64_t installed;       /* 1 once installed */
} omdp_reshard_move_t;

/* The segment's totals (omdp_reshard_totals). */
typedef struct omdp_reshard_totals {
    uint32_t buckets, n_engines, n_fh, reserved;
    uint64_t requested;       /* moves requested */
    uint64_t exported;        /* moves whose state was exported */
    uint64_t installed;       /* moves completed */
    uint64_t handover_cap;    /* bytes of the hand-over area */
    uint64_t attached;        /* feed handlers and engines that attached (omdp_reshard_attach) */
    uint64_t ended;           /* feed handlers whose stream ended */
} omdp_reshard_totals_t;

typedef struct omdp_reshard_seg omdp_reshard_seg_t;
/* cdef: end */

/* Create the segment `name` (mode 0600; an existing one is replaced) for `buckets` (a power
 * of two <= OMDP_RESHARD_MAX_BUCKETS) over n_engines engines and n_fh feed handlers, with
 * home[b] the engine of bucket b and a hand-over area of handover_cap bytes. NULL on
 * error (*err an OMDP_RESHARD_E* code). */
omdp_reshard_seg_t *omdp_reshard_create(const char *name, uint32_t buckets, uint32_t n_engines, uint32_t n_fh,
                                        const uint16_t *home, uint64_t handover_cap, int *err);
/* Map an existing segment (any process of the run). */
omdp_reshard_seg_t *omdp_reshard_open(const char *name, int *err);
void omdp_reshard_close(omdp_reshard_seg_t *seg);
/* Remove the name (mapped segments stay valid). 0, or OMDP_RESHARD_ESYS when absent. */
int omdp_reshard_unlink(const char *name);

/* Ask for bucket -> engine `to` (requested_ns: the caller's omdp clock). The new move id
 * (>= 1), or OMDP_RESHARD_EINVAL / EBUSY (a move in flight) / ESAME / EENDED (a feed handler
 * has ended, so the move could never be marked by all of them). Safe from any process. */
int64_t omdp_reshard_request(omdp_reshard_seg_t *seg, uint32_t bucket, uint32_t to, int64_t requested_ns);
void omdp_reshard_totals(const omdp_reshard_seg_t *seg, omdp_reshard_totals_t *out);
/* Copy move `id`; 0, or OMDP_RESHARD_EINVAL when it is not (or no longer) in the log. */
int omdp_reshard_move_info(const omdp_reshard_seg_t *seg, uint64_t id, omdp_reshard_move_t *out);
/* Current owner of a bucket (OMDP_RESHARD_NO_OWNER when out of range), and its home. */
uint32_t omdp_reshard_owner(const omdp_reshard_seg_t *seg, uint32_t bucket);
uint32_t omdp_reshard_home(const omdp_reshard_seg_t *seg, uint32_t bucket);
uint32_t omdp_reshard_buckets(const omdp_reshard_seg_t *seg);

/* ---- the parties' side (feed handlers and engines, C only) ---------------------------- */

/* A feed handler or engine counts itself in at init, so a trigger can wait until every
 * party of the run is there before it asks for a move. Returns the count. */
uint64_t omdp_reshard_attach(omdp_reshard_seg_t *seg);
/* A feed handler whose stream ended says so before it takes the last requests: from then on
 * requests are refused (EENDED), and one published before is seen by its next
 * omdp_reshard_requested (both are read-modify-writes of one word). */
void omdp_reshard_fh_ended(omdp_reshard_seg_t *seg);

/* Moves requested so far (acquire: the request of every id up to it is readable). */
uint64_t omdp_reshard_requested(const omdp_reshard_seg_t *seg);
/* The request of move id: 0 with *bucket, *to set, or OMDP_RESHARD_EINVAL. */
int omdp_reshard_request_of(const omdp_reshard_seg_t *seg, uint64_t id, uint32_t *bucket, uint32_t *to);
/* The hand-over area and its capacity (the old engine writes a handover header and its
 * series there before omdp_reshard_publish_export). */
uint8_t *omdp_reshard_handover_area(omdp_reshard_seg_t *seg, uint64_t *cap);
/* The old engine: move id's state is in the hand-over area (release). */
void omdp_reshard_publish_export(omdp_reshard_seg_t *seg, uint64_t id, uint32_t from, uint32_t n_series,
                                 uint64_t bytes, int64_t now_ns);
/* The last move id whose state was exported (acquire). */
uint64_t omdp_reshard_exported(const omdp_reshard_seg_t *seg);
/* The new engine: move id installed, the bucket now owned by `owner` (release); the next
 * move may be requested. */
void omdp_reshard_publish_install(omdp_reshard_seg_t *seg, uint64_t id, uint32_t bucket, uint32_t owner,
                                  uint64_t held, int64_t hold_ns, int64_t now_ns);

#endif /* OMDP_RESHARD_H */
