/* omdp operator contract: what every native operator implements (docs/architecture.md "Operators").
 *
 * An operator is a vtable plus the state its `init` returns. The runtime calls
 * `process_batch` with a batch - records laid back to back, each starting with an
 * omdp_record_header_t whose `length` (a multiple of 8, header included) finds the next -
 * and an emitter. `omdp_emit(emitter, port, records, nbytes)` hands a batch to one of the
 * operator's output ports: inside a partition that is a direct call into the next
 * operator's `process_batch` (fusion, depth-first, no copy); at a partition boundary the
 * runtime frames the batch into the transport. A batch passed in is lent for the duration
 * of the call and is read-only: an operator that changes records copies them into its own
 * buffer first (fan-out targets see the same bytes).
 *
 * Sources have no input ports; they implement `poll`, which the partition loop calls
 * whenever it has nothing else to do. Errors: a bad record is the operator's business
 * (count it in a counter, skip it, keep going); a negative return is fatal for the
 * partition (a peer died, a Python operator raised) and stops it with that code.
 */
#ifndef OMDP_OPERATOR_H
#define OMDP_OPERATOR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "omdp/record.h"

/* cdef: begin */
#define OMDP_OPERATOR_ABI 1

/* poll() results (non-negative) */
#define OMDP_POLL_IDLE 0     /* nothing produced this time */
#define OMDP_POLL_PRODUCED 1 /* emitted at least one batch */
#define OMDP_POLL_DONE 2     /* the source is exhausted: it is never polled again */

/* Error codes (negative). omdp_strerror names them. */
#define OMDP_OK 0
#define OMDP_ERR_PARAMS (-1)    /* init: bad parameters, message in init->err */
#define OMDP_ERR_NOMEM (-2)     /* allocation failed */
#define OMDP_ERR_PORT (-3)      /* emit to a port the operator does not have */
#define OMDP_ERR_RECORD (-4)    /* a malformed record where the runtime needs a good one */
#define OMDP_ERR_TOO_BIG (-5)   /* one record larger than the channel's max_message */
#define OMDP_ERR_PEER_GONE (-6) /* the other end of a channel died */
#define OMDP_ERR_STOPPED (-7)   /* hard stop requested while waiting for room */
#define OMDP_ERR_PYTHON (-8)    /* a Python operator or channel raised */
#define OMDP_ERR_CHANNEL (-9)   /* a transport failed */
#define OMDP_ERR_STATE (-10)    /* the runtime was used out of order (setup after start) */

/* Where emitted batches go; opaque to operators, owned by the runtime. */
typedef struct omdp_emitter omdp_emitter_t;
/* cdef: end */

/* Hand `nbytes` of records to output port `port`. Returns OMDP_OK or a negative error,
 * which the operator returns from process_batch/poll as is. A port with no consumer
 * discards the batch (counted by the runtime). nbytes == 0 is a no-op. */
int omdp_emit(const omdp_emitter_t *emitter, uint32_t port, const uint8_t *records, uint32_t nbytes);

/* Name of an OMDP_ERR_* code (static string). */
const char *omdp_strerror(int code);

/* One named counter; `name` points at static storage of the operator. */
/* cdef: begin */
typedef struct omdp_counter {
    const char *name;
    uint64_t value;
} omdp_counter_t;

/* What `init` gets: the operator's parameters as its own C struct (declared in the
 * operator's header, packed by its Python binding, size-checked by init), the instance's
 * place among its replicas, and a buffer for an error message. */
typedef struct omdp_op_init {
    const void *params;
    uint32_t params_size;
    uint32_t replica;  /* 0 .. replicas-1 */
    uint32_t replicas;
    const char *name;  /* instance name, e.g. "relay[3]" */
    char *err;         /* init writes a one-line reason here on failure */
    uint32_t err_size;
} omdp_op_init_t;
/* cdef: end */

/* For an operator's init: the one-line reason (printf format) written into init->err when
 * it has room, and OMDP_ERR_PARAMS returned, so every operator refuses parameters alike. */
int omdp_op_init_fail(const omdp_op_init_t *init, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* cdef: begin */
typedef struct omdp_operator_vtable {
    uint32_t abi;       /* OMDP_OPERATOR_ABI */
    const char *kind;   /* registry name, e.g. "seq_source" */
    uint32_t n_inputs;  /* input ports 0 .. n_inputs-1 */
    uint32_t n_outputs; /* output ports 0 .. n_outputs-1 */
    /* Allocate state from params. 0 or a negative error (message in init->err). */
    int (*init)(void **state, const omdp_op_init_t *init);
    /* One batch arrived on input port `in_port`. NULL for sources. */
    int (*process_batch)(void *state, uint32_t in_port, const uint8_t *records, uint32_t nbytes,
                         const omdp_emitter_t *emitter);
    /* Sources only (NULL otherwise): produce what is due; OMDP_POLL_* or a negative error. */
    int (*poll)(void *state, const omdp_emitter_t *emitter);
    /* Optional (may be NULL): every input has ended; emit what is still held. */
    int (*end_of_stream)(void *state, const omdp_emitter_t *emitter);
    /* Fill up to `max` counters; returns how many the operator has (may exceed max). */
    uint32_t (*counters)(void *state, omdp_counter_t *out, uint32_t max);
    /* Free the state. */
    void (*close)(void *state);
} omdp_operator_vtable_t;
/* cdef: end */

/* Walk a batch, bounds-checked. Start with *offset = 0. Returns 1 and sets *record to the
 * record at *offset (advancing *offset past it), 0 at the end of the batch, or
 * OMDP_ERR_RECORD when the length field is shorter than a header, not a multiple of 8 or
 * runs past the end (the rest of the batch cannot be framed and must be skipped). */
static inline int omdp_batch_next(const uint8_t *batch, uint32_t nbytes, uint32_t *offset,
                                  const uint8_t **record)
{
    uint32_t off = *offset;
    if (off >= nbytes)
        return 0;
    if (nbytes - off < OMDP_RECORD_HEADER_SIZE)
        return OMDP_ERR_RECORD;
    uint16_t len;
    memcpy(&len, batch + off + offsetof(omdp_record_header_t, length), sizeof len);
    if (len < OMDP_RECORD_HEADER_SIZE || (len & 7u) != 0 || len > nbytes - off)
        return OMDP_ERR_RECORD;
    *record = batch + off;
    *offset = off + len;
    return 1;
}

/* How many records a batch holds, or OMDP_ERR_RECORD when it does not tile exactly. */
static inline int64_t omdp_batch_count(const uint8_t *batch, uint32_t nbytes)
{
    uint32_t off = 0;
    const uint8_t *rec;
    int64_t n = 0;
    int r;
    while ((r = omdp_batch_next(batch, nbytes, &off, &rec)) == 1)
        n++;
    return r < 0 ? (int64_t)r : n;
}

#endif /* OMDP_OPERATOR_H */
