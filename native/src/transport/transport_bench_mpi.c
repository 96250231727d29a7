/* The `mpi` transport's benchmark loops (transport_bench_mpi.h). */
#include "omdp/transport_bench_mpi.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "omdp/clock.h"

#define LOOP_TIMEOUT_NS 20000000000LL /* a loop whose peer stops answering gives up */
#define POOL 64

int64_t omdp_tbench_mpi_send(omdp_mpi_sender_t *tx, uint64_t n, uint32_t size, uint64_t *checksum)
{
    uint32_t stride = (size + 63u) & ~63u;
    uint8_t *pool = aligned_alloc(64, (size_t)POOL * (stride ? stride : 64));
    uint64_t sums[POOL];
    if (!pool)
        return OMDP_VEGA_E_SYS;
    for (uint32_t k = 0; k < POOL; k++) {
        omdp_tbench_fill(pool + (size_t)k * stride, size, k);
        sums[k] = omdp_tbench_checksum(pool + (size_t)k * stride, size);
    }
    uint64_t total = 0, i = 0;
    for (; i < n; i++) {
        uint32_t k = (uint32_t)(i & (POOL - 1));
        int rc = omdp_mpi_put(tx, pool + (size_t)k * stride, size, LOOP_TIMEOUT_NS);
        if (rc != OMDP_VEGA_OK) {
            free(pool);
            *checksum = total;
            return rc < 0 ? rc : (int64_t)i;
        }
        total += sums[k];
    }
    free(pool);
    *checksum = total;
    return (int64_t)i;
}

int64_t omdp_tbench_mpi_recv(omdp_mpi_receiver_t *rx, uint64_t n, uint64_t *checksum, int64_t *t_first,
                             int64_t *t_last)
{
    omdp_vega_msg_t m;
    uint64_t total = 0, got = 0;
    *t_first = *t_last = 0;
    while (got < n) {
        int rc = omdp_mpi_get(rx, &m, LOOP_TIMEOUT_NS);
        if (rc != OMDP_VEGA_OK)
            return rc < 0 ? rc : (int64_t)got;
        if (got == 0)
            *t_first = omdp_now_ns();
        total += omdp_tbench_checksum(m.data, m.size);
        rc = omdp_mpi_release(rx, m.slot_id);
        if (rc)
            return rc;
        got++;
    }
    *t_last = omdp_now_ns();
    *checksum = total;
    return (int64_t)got;
}

static int wait_ack(_Atomic uint64_t *ack, uint64_t want)
{
    int64_t deadline = omdp_now_ns() + LOOP_TIMEOUT_NS;
    for (uint64_t spins = 1; atomic_load_explicit(ack, memory_order_acquire) < want; spins++)
        if ((spins & 4095) == 0 && omdp_now_ns() > deadline)
            return OMDP_VEGA_TIMEOUT;
    return OMDP_VEGA_OK;
}

int64_t omdp_tbench_mpi_lat_send(omdp_mpi_sender_t *tx, uint64_t n, uint32_t size, uint64_t *ack_word,
                                 int64_t gap_ns, uint64_t *checksum)
{
    _Atomic uint64_t *ack = (_Atomic uint64_t *)ack_word;
    if (size < 8)
        return OMDP_VEGA_E_BAD_SPEC;
    uint8_t *buf = malloc(size);
    if (!buf)
        return OMDP_VEGA_E_SYS;
    uint64_t i = 0, total = 0;
    *checksum = 0;
    for (; i < n; i++) {
        omdp_tbench_fill(buf, size, i);
        int64_t t = omdp_now_ns();
        memcpy(buf, &t, 8);
        int rc = omdp_mpi_put(tx, buf, size, LOOP_TIMEOUT_NS);
        if (rc != OMDP_VEGA_OK || wait_ack(ack, i + 1) != OMDP_VEGA_OK) {
            free(buf);
            return rc < 0 ? rc : (int64_t)i;
        }
        total += omdp_tbench_checksum(buf, size);
        *checksum = total;
        int64_t until = omdp_now_ns() + gap_ns;
        while (omdp_now_ns() < until)
            ;
    }
    free(buf);
    return (int64_t)i;
}

int64_t omdp_tbench_mpi_lat_recv(omdp_mpi_receiver_t *rx, uint64_t n, int64_t *lat, uint64_t *ack_word,
                                 uint64_t *checksum)
{
    _Atomic uint64_t *ack = (_Atomic uint64_t *)ack_word;
    omdp_vega_msg_t m;
    uint64_t total = 0, i = 0;
    for (; i < n; i++) {
        int rc = omdp_mpi_get(rx, &m, LOOP_TIMEOUT_NS);
        int64_t t = omdp_now_ns();
        if (rc != OMDP_VEGA_OK)
            return rc < 0 ? rc : (int64_t)i;
        int64_t sent;
        memcpy(&sent, m.data, 8);
        lat[i] = t - sent;
        total += omdp_tbench_checksum(m.data, m.size);
        rc = omdp_mpi_release(rx, m.slot_id);
        if (rc)
            return rc;
        atomic_store_explicit(ack, i + 1, memory_order_release);
    }
    *checksum = total;
    return (int64_t)i;
}
