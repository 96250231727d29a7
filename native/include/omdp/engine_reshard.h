/* The decision engine's side of re-sharding between engines (reshard.h has the protocol).
 *
 * Bucket state: omdp_engine_export_bucket writes every series of a bucket's underlyings
 * (underlying_id % buckets == bucket) as omdp_reshard_series_t after an
 * omdp_reshard_handover_t; omdp_engine_import_series installs such series into another
 * engine (a series it already has - the bucket coming back - is overwritten). Both run on
 * the engine's hot-path thread.
 *
 * The marker / hold / install state machine (omdp_engine_reshard_t) sits in front of one
 * engine (the engine operator's, engine_op.h, when it has a reshard segment) and sees every
 * batch before the engine:
 *   - a marker record (OMDP_RT_RESHARD) is checked - its sizes, bucket, engines and feed
 *     handler in range, this engine one end of the move, the move neither finished here
 *     nor another one in progress - and a bad, duplicate or unexpected one is counted and
 *     dropped, never a crash;
 *   - the engine giving the bucket up exports its state once the marker of every feed
 *     handler has come (after them it gets no message of the bucket);
 *   - the engine taking it holds back the bucket's messages from its first marker of the
 *     move until the state is in the hand-over area (checked at every batch), installs it,
 *     runs the held messages in order, and publishes the move as installed;
 *   - every other message goes to the engine as it comes, in place.
 * omdp_engine_reshard_finish, at the end of the stream, exports a bucket still being given up
 * (no message of it can come any more) and waits (bounded) for a state still outstanding, so
 * nothing held is lost. */
#ifndef OMDP_ENGINE_RESHARD_H
#define OMDP_ENGINE_RESHARD_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/engine.h"
#include "omdp/engine_op.h"
#include "omdp/reshard.h"

/* cdef: begin */
#define OMDP_ENGINE_RESHARD_MAX_HELD (1u << 22) /* messages held back at most (beyond: run unheld, counted) */
/* cdef: end */

/* Export bucket `bucket` of `buckets` (a power of two) into area[0, cap): the handover
 * header is left to the caller (its bytes are reserved at the front). Returns the bytes
 * used (header included) with *n_series set, OMDP_ENGINE_EOUTSMALL when the series do not
 * fit, or OMDP_ENGINE_EINVAL. */
int64_t omdp_engine_export_bucket(const omdp_engine_t *engine, uint32_t buckets, uint32_t bucket, uint8_t *area,
                                  uint64_t cap, uint32_t *n_series);
/* Install n series; returns how many (a full table is counted in the engine's table_full).
 * slots (NULL, or n entries) gets each one's slot (OMDP_ENGINE_NO_SLOT when not installed). */
uint32_t omdp_engine_import_series(omdp_engine_t *engine, const omdp_reshard_series_t *in, uint32_t n,
                                   uint32_t *slots);
/* Carried limits: pricing publishes every slot, and one computed from a snapshot taken before
 * an import would disable the imported series' limits (or, for a bucket coming back, set
 * them from the books this engine had left behind). When a publish is pending (the front
 * differs from *front_seen; then updated), the entries of `slots` get refs[i] in it, before
 * the hot path takes it. 1: a publish was patched, 0: none pending. Hot-path thread only.
 * The publish after that one was computed after the import. */
int omdp_engine_carry_refs(omdp_engine_t *engine, const uint32_t *slots, const omdp_series_ref_t *refs, uint32_t n,
                           uint32_t *front_seen);
/* The pricing buffer the hot path reads now (where an import writes the limits; a publish
 * not yet taken is another). Hot-path thread only. */
uint32_t omdp_engine_refs_in_use(const omdp_engine_t *engine);

/* cdef: begin */
typedef struct omdp_engine_reshard omdp_engine_reshard_t;
/* cdef: end */

/* The state machine of engine `engine_index` (its port number at the feed handlers) over
 * the run's segment; both borrowed, outliving it. NULL with err set on a bad argument. */
omdp_engine_reshard_t *omdp_engine_reshard_new(omdp_reshard_seg_t *seg, omdp_engine_t *engine, uint32_t engine_index,
                                               char *err, size_t errlen);
void omdp_engine_reshard_free(omdp_engine_reshard_t *r);

/* One input batch: markers handled, the held bucket's messages held, every other run of OPRA
 * message records handed to fn (omdp_engine_for_each_msg_run, with scratch and counts) in
 * order; held messages go to fn when their state is installed. OMDP_OK or fn's error. */
int omdp_engine_reshard_batch(omdp_engine_reshard_t *r, const uint8_t *records, uint32_t nbytes,
                              omdp_opra_msg_t *scratch, omdp_msg_run_fn fn, void *ctx, const omdp_emitter_t *em,
                              omdp_msg_run_counts_t *counts);
/* End of stream: a move still held waits up to wait_ns for its state, then runs what it held
 * (without the state on a timeout: counted install_timeouts). */
int omdp_engine_reshard_finish(omdp_engine_reshard_t *r, int64_t wait_ns, omdp_msg_run_fn fn, void *ctx,
                               const omdp_emitter_t *em);

/* The same for a caller without an emitter (tests, tools): the engine's output is appended to
 * out[*out_len, out_cap); OMDP_ENGINE_EOUTSMALL when it does not fit. */
int omdp_engine_reshard_process(omdp_engine_reshard_t *r, const uint8_t *records, uint32_t nbytes, uint8_t *out,
                                uint32_t out_cap, uint32_t *out_len);
int omdp_engine_reshard_finish_into(omdp_engine_reshard_t *r, int64_t wait_ns, uint8_t *out, uint32_t out_cap,
                                    uint32_t *out_len);

/* The bucket being held back, or -1. */
int32_t omdp_engine_reshard_holding(const omdp_engine_reshard_t *r);

/* Counters (names static): markers_seen, markers_bad, markers_duplicate, markers_unexpected,
 * exports, installs, state_bytes_out, state_bytes_in, series_in, held, held_max,
 * hold_max_ns, install_timeouts, state_lost, held_overflow, exports_at_end, markers_late
 * (a handler's marker that reached the new engine after the install: normal with several
 * feed handlers) (each prefixed reshard_). Returns how many there are. */
uint32_t omdp_engine_reshard_counters(const omdp_engine_reshard_t *r, omdp_counter_t *out, uint32_t max);

#endif /* OMDP_ENGINE_RESHARD_H */
