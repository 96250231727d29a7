/* The `mpi` transport's calls as the benchmark loops' ops (transport_bench_mpi.h). */
#include "omdp/transport_bench_mpi.h"

static int mpi_put(void *tx, const void *data, uint32_t size, int64_t timeout_ns)
{
    return omdp_mpi_put(tx, data, size, timeout_ns);
}

static int mpi_get(void *rx, omdp_vega_msg_t *m, int64_t timeout_ns)
{
    return omdp_mpi_get(rx, m, timeout_ns);
}

static int mpi_release(void *rx, uint32_t slot_id)
{
    return omdp_mpi_release(rx, slot_id);
}

static const omdp_tbench_tx_ops_t MPI_TX = {mpi_put};
static const omdp_tbench_rx_ops_t MPI_RX = {mpi_get, mpi_release};

const omdp_tbench_tx_ops_t *omdp_tbench_mpi_tx_ops(void) { return &MPI_TX; }
const omdp_tbench_rx_ops_t *omdp_tbench_mpi_rx_ops(void) { return &MPI_RX; }
