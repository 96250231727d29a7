/* Vega channel knob defaults as the C side sees them.
 *
 * The one place these defaults are decided is omdp/transport/spec.py (docs/architecture.md
 * "Transports and knobs"); this header repeats them for C callers that build a channel
 * without Python, and tests/unit/test_transport_defaults.py fails when the two disagree.
 */
#ifndef OMDP_VEGA_DEFAULTS_H
#define OMDP_VEGA_DEFAULTS_H

/* Wait strategies (spec.py WaitStrategy), in the order of the Literal. */
/* cdef: begin */
#define OMDP_VEGA_WAIT_SPIN 0       /* busy poll with a pause instruction */
#define OMDP_VEGA_WAIT_SPIN_YIELD 1 /* poll, then sched_yield between rounds */
#define OMDP_VEGA_WAIT_SPIN_BLOCK 2 /* poll, then sleep on a futex until woken */

/* Full-ring policies (spec.py FullPolicy). */
#define OMDP_VEGA_ON_FULL_BLOCK 0 /* back-pressure: wait for a credit */
#define OMDP_VEGA_ON_FULL_DROP 1  /* drop the message and count it */

#define OMDP_VEGA_DEFAULT_QUEUE_SIZE 128
#define OMDP_VEGA_DEFAULT_MAX_MESSAGE 65536
#define OMDP_VEGA_DEFAULT_MUTEX 1
#define OMDP_VEGA_DEFAULT_WAIT OMDP_VEGA_WAIT_SPIN
#define OMDP_VEGA_DEFAULT_ON_FULL OMDP_VEGA_ON_FULL_BLOCK
#define OMDP_VEGA_DEFAULT_SIGNAL_EVERY 16

/* Limits the spec validates (queue_size power of two within these, max_message within). */
#define OMDP_VEGA_MIN_QUEUE_SIZE 2
#define OMDP_VEGA_MAX_QUEUE_SIZE (1u << 20)
#define OMDP_VEGA_MIN_MESSAGE 8
#define OMDP_VEGA_MAX_MESSAGE_LIMIT (1u << 26)
/* cdef: end */

#endif /* OMDP_VEGA_DEFAULTS_H */
