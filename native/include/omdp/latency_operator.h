/* The latency collector as an operator (operator.h): a sink with one input port.
 *
 * Why a thin shim: the collector itself (collector.h) is owned by the Python
 * ``LatencyCollector`` of the partition process, which at the end of the run writes
 * samples.parquet from the collector's rows; the operator borrows it, so every batch of the
 * partition's C loop goes straight into omdp_latency_collect_batch without Python.
 * The batch's input port is the samples' `source` (their engine, unless the identity
 * layout reads it from the record). A bad record length is counted by the collector and
 * the rest of that batch skipped; the partition goes on. End of stream and close publish
 * the final live figures.
 */
#ifndef OMDP_LATENCY_OPERATOR_H
#define OMDP_LATENCY_OPERATOR_H

#include "omdp/collector.h"
#include "omdp/operator.h"

/* cdef: begin */
typedef struct omdp_latency_op_params {
    omdp_latency_collector_t *collector; /* borrowed; outlives the operator */
} omdp_latency_op_params_t;
/* cdef: end */

/* kind "latency_collector": 1 input, 0 outputs. */
const omdp_operator_vtable_t *omdp_latency_collector_vtable(void);

#endif /* OMDP_LATENCY_OPERATOR_H */
