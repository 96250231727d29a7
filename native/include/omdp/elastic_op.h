/* The elastic engine partition as an omdp operator (operator.h), the drop-in twin of the
 * decision engine operator (engine_op.h): input port 0 takes batches of OPRA message
 * records, output port 0 ("samples") gets the sampled copies, port 1 ("signals") the signal
 * records. Per batch it dispatches the messages into their buckets' rings (elastic.h), and
 * emits whatever the workers have finished; when a ring is full it emits and retries, so
 * back-pressure reaches the input channel as it does for the static engine. At end of
 * stream it waits for the workers to drain and emits the rest.
 *
 * The partition (`shared`) is created and owned by Python (decision_engines.elastic), which
 * runs the control loop beside it and keeps it alive until after this operator's close.
 */
#ifndef OMDP_ELASTIC_OP_H
#define OMDP_ELASTIC_OP_H

#include <stdint.h>

#include "omdp/elastic.h"
#include "omdp/operator.h"

/* cdef: begin */
#define OMDP_ELASTIC_OP_PORT_SAMPLES 0
#define OMDP_ELASTIC_OP_PORT_SIGNALS 1

typedef struct omdp_elastic_op_params {
    omdp_elastic_t *shared;  /* the partition (required) */
    uint32_t out_bytes;      /* collect buffer: >= OMDP_ENGINE_MAX_OUT_PER_MSG, multiple of 8 */
    uint32_t reserved;       /* zero */
} omdp_elastic_op_params_t;
/* cdef: end */

const omdp_operator_vtable_t *omdp_elastic_op_vtable(void);

#endif /* OMDP_ELASTIC_OP_H */
