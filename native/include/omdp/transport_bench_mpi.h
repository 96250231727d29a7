/* C loops that drive the `mpi` transport for omdp bench transport (built with the MPI
 * part only): the same four runs, payloads and checksums as transport_bench.h's vega
 * loops, so the MPI rows compare with Vega's one for one. */
#ifndef OMDP_TRANSPORT_BENCH_MPI_H
#define OMDP_TRANSPORT_BENCH_MPI_H

#include <stdint.h>

#include "omdp/channel_mpi.h"
#include "omdp/transport_bench.h"

int64_t omdp_tbench_mpi_send(omdp_mpi_sender_t *tx, uint64_t n, uint32_t size, uint64_t *checksum);
/* t_first/t_last: arrival of the first and the last message. */
int64_t omdp_tbench_mpi_recv(omdp_mpi_receiver_t *rx, uint64_t n, uint64_t *checksum, int64_t *t_first,
                             int64_t *t_last);
/* Latency: the send time in the first 8 bytes, the next message after *ack_word reached
 * the count, then gap_ns (as omdp_tbench_vega_lat_send). */
int64_t omdp_tbench_mpi_lat_send(omdp_mpi_sender_t *tx, uint64_t n, uint32_t size, uint64_t *ack_word,
                                 int64_t gap_ns, uint64_t *checksum);
int64_t omdp_tbench_mpi_lat_recv(omdp_mpi_receiver_t *rx, uint64_t n, int64_t *lat, uint64_t *ack_word,
                                 uint64_t *checksum);

#endif /* OMDP_TRANSPORT_BENCH_MPI_H */
