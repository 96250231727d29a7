/* The `mpi` transport's calls as transport_bench.h's loop ops (built with the MPI part
 * only, in omdp._native_mpi): omdp bench transport runs its MPI rows through the very
 * loops of the Vega rows (omdp_tbench_send & co.), so the two compare one for one. */
#ifndef OMDP_TRANSPORT_BENCH_MPI_H
#define OMDP_TRANSPORT_BENCH_MPI_H

#include "omdp/channel_mpi.h"
#include "omdp/transport_bench.h"

const omdp_tbench_tx_ops_t *omdp_tbench_mpi_tx_ops(void);
const omdp_tbench_rx_ops_t *omdp_tbench_mpi_rx_ops(void);

#endif /* OMDP_TRANSPORT_BENCH_MPI_H */
