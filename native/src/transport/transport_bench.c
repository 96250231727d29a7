/* Benchmark and integrity loops over Vega (transport_bench.h). */
#define _GNU_SOURCE
#include "omdp/transport_bench.h"

#include <stdlib.h>

#include "omdp/clock.h"

#define LOOP_TIMEOUT_NS 20000000000LL /* a loop whose peer stops answering gives up */
#define POOL 64
#define MAX_BATCH 256

static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

uint64_t omdp_tbench_checksum(const uint8_t *p, uint32_t size)
{
    uint64_t sum = 0;
    uint32_t words = size / 8;
    for (uint32_t i = 0; i < words; i++) {
        uint64_t w;
        memcpy(&w, p + 8 * (size_t)i, 8);
        sum += w;
    }
    if (size & 7) {
        uint64_t w = 0;
        memcpy(&w, p + 8 * (size_t)words, size & 7);
        sum += w;
    }
    return sum;
}

void omdp_tbench_fill(uint8_t *p, uint32_t size, uint64_t seq)
{
    uint64_t base = mix64(seq);
    uint32_t words = size / 8;
    for (uint32_t i = 0; i < words; i++) {
        uint64_t w = mix64(base + i);
        memcpy(p + 8 * (size_t)i, &w, 8);
    }
    if (size & 7) {
        uint64_t w = mix64(base + words);
        memcpy(p + 8 * (size_t)words, &w, size & 7);
    }
}

static uint32_t max_of(const uint32_t *sizes, uint32_t n)
{
    uint32_t m = 8;
    for (uint32_t i = 0; i < n; i++)
        m = sizes[i] > m ? sizes[i] : m;
    return m;
}

int64_t omdp_tbench_send_pattern(omdp_vega_sender_t *tx, uint64_t n, const uint32_t *sizes, uint32_t nsizes,
                                 int64_t timeout_ns)
{
    if (nsizes == 0)
        return OMDP_VEGA_E_BAD_SPEC;
    uint8_t *buf = malloc(max_of(sizes, nsizes));
    if (!buf)
        return OMDP_VEGA_E_SYS;
    uint64_t i = 0;
    for (; i < n; i++) {
        uint32_t size = sizes[i % nsizes];
        omdp_tbench_fill(buf, size, i);
        int rc = omdp_vega_put(tx, buf, size, timeout_ns);
        if (rc != OMDP_VEGA_OK) {
            free(buf);
            return rc < 0 ? rc : (int64_t)i;
        }
    }
    free(buf);
    return (int64_t)i;
}

int64_t omdp_tbench_recv_verify(omdp_vega_receiver_t *rx, uint64_t n, const uint32_t *sizes, uint32_t nsizes,
                                int64_t timeout_ns, uint64_t *bad, uint64_t *first_bad)
{
    if (nsizes == 0)
        return OMDP_VEGA_E_BAD_SPEC;
    uint8_t *want = malloc(max_of(sizes, nsizes));
    if (!want)
        return OMDP_VEGA_E_SYS;
    *bad = 0;
    *first_bad = UINT64_MAX;
    omdp_vega_msg_t m;
    uint64_t i = 0;
    for (; i < n; i++) {
        int rc = omdp_vega_get(rx, &m, timeout_ns);
        if (rc != OMDP_VEGA_OK) {
            free(want);
            return rc < 0 ? rc : (int64_t)i;
        }
        uint32_t size = sizes[i % nsizes];
        omdp_tbench_fill(want, size, i);
        if (m.size != size || memcmp(m.data, want, size) != 0) {
            if (*bad == 0)
                *first_bad = i;
            (*bad)++;
        }
        rc = omdp_vega_release(rx, m.slot_id);
        if (rc) {
            free(want);
            return rc;
        }
    }
    free(want);
    return (int64_t)i;
}

static uint8_t *make_pool(uint32_t size, uint64_t *sums)
{
    uint32_t stride = (size + 63u) & ~63u;
    uint8_t *pool = aligned_alloc(64, (size_t)POOL * (stride ? stride : 64));
    if (!pool)
        return NULL;
    for (uint32_t i = 0; i < POOL; i++) {
        omdp_tbench_fill(pool + (size_t)i * stride, size, i);
        sums[i] = omdp_tbench_checksum(pool + (size_t)i * stride, size);
    }
    return pool;
}

static int wait_ack(_Atomic uint64_t *ack, uint64_t want)
{
    uint64_t spins = 0;
    int64_t start = 0;
    while (atomic_load_explicit(ack, memory_order_acquire) < want) {
        omdp_vega_pause();
        if ((++spins & 4095) == 0) {
            int64_t now = omdp_now_ns();
            if (start == 0)
                start = now;
            else if (now - start > LOOP_TIMEOUT_NS)
                return OMDP_VEGA_TIMEOUT;
        }
    }
    return OMDP_VEGA_OK;
}

/* The loops every medium runs (always_inline: the Vega wrappers below pass Vega's calls,
 * which the compiler then calls directly; omdp_tbench_send & co. pass another medium's). */
static inline __attribute__((always_inline)) int64_t send_loop(const omdp_tbench_tx_ops_t *ops, void *tx,
                                                               uint64_t n, uint32_t size, uint64_t *checksum)
{
    uint64_t sums[POOL];
    uint8_t *pool = make_pool(size, sums);
    if (!pool)
        return OMDP_VEGA_E_SYS;
    uint32_t stride = (size + 63u) & ~63u;
    uint64_t total = 0, i = 0;
    for (; i < n; i++) {
        uint32_t k = (uint32_t)(i & (POOL - 1));
        int rc = ops->put(tx, pool + (size_t)k * stride, size, LOOP_TIMEOUT_NS);
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

static inline __attribute__((always_inline)) int64_t lat_send_loop(const omdp_tbench_tx_ops_t *ops, void *tx,
                                                                   uint64_t n, uint32_t size, uint64_t *ack_word,
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
        int rc = ops->put(tx, buf, size, LOOP_TIMEOUT_NS);
        if (rc != OMDP_VEGA_OK || wait_ack(ack, i + 1) != OMDP_VEGA_OK) {
            free(buf);
            return rc < 0 ? rc : (int64_t)i;
        }
        total += omdp_tbench_checksum(buf, size);
        *checksum = total;
        int64_t until = omdp_now_ns() + gap_ns;
        while (omdp_now_ns() < until)
            omdp_vega_pause();
    }
    free(buf);
    return (int64_t)i;
}

static inline __attribute__((always_inline)) int64_t lat_recv_loop(const omdp_tbench_rx_ops_t *ops, void *rx,
                                                                   uint64_t n, int64_t *lat, uint64_t *ack_word,
                                                                   uint64_t *checksum)
{
    _Atomic uint64_t *ack = (_Atomic uint64_t *)ack_word;
    omdp_vega_msg_t m;
    uint64_t total = 0, i = 0;
    for (; i < n; i++) {
        int rc = ops->get(rx, &m, LOOP_TIMEOUT_NS);
        int64_t t = omdp_now_ns();
        if (rc != OMDP_VEGA_OK)
            return rc < 0 ? rc : (int64_t)i;
        int64_t sent;
        memcpy(&sent, m.data, 8);
        lat[i] = t - sent;
        total += omdp_tbench_checksum(m.data, m.size);
        rc = ops->release(rx, m.slot_id);
        if (rc)
            return rc;
        atomic_store_explicit(ack, i + 1, memory_order_release);
    }
    *checksum = total;
    return (int64_t)i;
}

int64_t omdp_tbench_send(const omdp_tbench_tx_ops_t *ops, void *tx, uint64_t n, uint32_t size, uint64_t *checksum)
{
    return send_loop(ops, tx, n, size, checksum);
}

int64_t omdp_tbench_recv(const omdp_tbench_rx_ops_t *ops, void *rx, uint64_t n, uint64_t *checksum,
                         int64_t *t_first, int64_t *t_last)
{
    omdp_vega_msg_t m;
    uint64_t total = 0, got = 0;
    *t_first = *t_last = 0;
    while (got < n) {
        int rc = ops->get(rx, &m, LOOP_TIMEOUT_NS);
        if (rc != OMDP_VEGA_OK)
            return rc < 0 ? rc : (int64_t)got;
        if (got == 0)
            *t_first = omdp_now_ns();
        total += omdp_tbench_checksum(m.data, m.size);
        rc = ops->release(rx, m.slot_id);
        if (rc)
            return rc;
        got++;
    }
    *t_last = omdp_now_ns();
    *checksum = total;
    return (int64_t)got;
}

int64_t omdp_tbench_lat_send(const omdp_tbench_tx_ops_t *ops, void *tx, uint64_t n, uint32_t size,
                             uint64_t *ack_word, int64_t gap_ns, uint64_t *checksum)
{
    return lat_send_loop(ops, tx, n, size, ack_word, gap_ns, checksum);
}

int64_t omdp_tbench_lat_recv(const omdp_tbench_rx_ops_t *ops, void *rx, uint64_t n, int64_t *lat,
                             uint64_t *ack_word, uint64_t *checksum)
{
    return lat_recv_loop(ops, rx, n, lat, ack_word, checksum);
}

/* Vega's calls as the loops' ops. */
static int vega_put(void *tx, const void *data, uint32_t size, int64_t timeout_ns)
{
    return omdp_vega_put(tx, data, size, timeout_ns);
}

static int vega_get(void *rx, omdp_vega_msg_t *m, int64_t timeout_ns)
{
    return omdp_vega_get(rx, m, timeout_ns);
}

static int vega_release(void *rx, uint32_t slot_id)
{
    return omdp_vega_release(rx, slot_id);
}

static const omdp_tbench_tx_ops_t VEGA_TX = {vega_put};
static const omdp_tbench_rx_ops_t VEGA_RX = {vega_get, vega_release};

int64_t omdp_tbench_vega_send(omdp_vega_sender_t *tx, uint64_t n, uint32_t size, uint64_t *checksum)
{
    return send_loop(&VEGA_TX, tx, n, size, checksum);
}

int64_t omdp_tbench_vega_recv(omdp_vega_receiver_t *rx, uint64_t n, uint32_t batch, uint64_t *checksum,
                              int64_t *t_first, int64_t *t_last)
{
    omdp_vega_msg_t msgs[MAX_BATCH];
    uint64_t total = 0, got = 0;
    if (batch == 0 || batch > MAX_BATCH)
        batch = MAX_BATCH;
    *t_first = *t_last = 0;
    while (got < n) {
        uint32_t want = n - got < batch ? (uint32_t)(n - got) : batch;
        int64_t k = omdp_vega_get_batch(rx, msgs, want);
        if (k < 0)
            return k;
        if (k == 0) {
            int rc = omdp_vega_wait_data(rx, LOOP_TIMEOUT_NS);
            if (rc != OMDP_VEGA_OK)
                break;
            continue;
        }
        if (got == 0)
            *t_first = omdp_now_ns();
        for (int64_t j = 0; j < k; j++)
            total += omdp_tbench_checksum(msgs[j].data, msgs[j].size);
        int rc = omdp_vega_release_batch(rx, msgs[0].slot_id, (uint32_t)k);
        if (rc)
            return rc;
        got += (uint64_t)k;
    }
    *t_last = omdp_now_ns();
    *checksum = total;
    return (int64_t)got;
}

int64_t omdp_tbench_vega_lat_send(omdp_vega_sender_t *tx, uint64_t n, uint32_t size, uint64_t *ack_word,
                                  int64_t gap_ns, uint64_t *checksum)
{
    return lat_send_loop(&VEGA_TX, tx, n, size, ack_word, gap_ns, checksum);
}

int64_t omdp_tbench_vega_lat_recv(omdp_vega_receiver_t *rx, uint64_t n, int64_t *lat, uint64_t *ack_word,
                                  uint64_t *checksum)
{
    return lat_recv_loop(&VEGA_RX, rx, n, lat, ack_word, checksum);
}

int64_t omdp_tbench_pingpong(uint64_t *ping_word, uint64_t *pong_word, uint64_t n, int initiator, int64_t *t_a,
                             int64_t *t_b)
{
    _Atomic uint64_t *ping = (_Atomic uint64_t *)ping_word, *pong = (_Atomic uint64_t *)pong_word;
    for (uint64_t i = 1; i <= n; i++) {
        if (initiator) {
            t_a[i - 1] = omdp_now_ns();
            atomic_store_explicit(ping, i, memory_order_release);
            if (wait_ack(pong, i) != OMDP_VEGA_OK)
                return (int64_t)i - 1;
            t_b[i - 1] = omdp_now_ns();
        } else {
            if (wait_ack(ping, i) != OMDP_VEGA_OK)
                return (int64_t)i - 1;
            t_a[i - 1] = omdp_now_ns();
            atomic_store_explicit(pong, i, memory_order_release);
        }
    }
    return (int64_t)n;
}

int64_t omdp_tbench_memcpy(uint8_t *dst, uint32_t stride, uint32_t nslots, uint32_t size, uint64_t iters)
{
    uint64_t sums[POOL];
    uint8_t *pool = make_pool(size, sums);
    if (!pool || nslots == 0)
        return OMDP_VEGA_E_SYS;
    uint32_t pstride = (size + 63u) & ~63u;
    int64_t t0 = omdp_now_ns();
    for (uint64_t i = 0; i < iters; i++) {
        memcpy(dst + (size_t)(i % nslots) * stride, pool + (size_t)(i & (POOL - 1)) * pstride, size);
        __asm__ __volatile__("" ::: "memory"); /* keep every copy */
    }
    int64_t dt = omdp_now_ns() - t0;
    free(pool);
    return dt;
}

/* The fused receiver: a real call the compiler may not fold into the sender's loop. */
__attribute__((noinline)) static uint64_t fused_receive(const uint8_t *p, uint32_t size, int64_t *arrival)
{
    *arrival = omdp_now_ns();
    return omdp_tbench_checksum(p, size);
}

__attribute__((noinline)) static uint64_t fused_consume(const uint8_t *p, uint32_t size)
{
    return omdp_tbench_checksum(p, size);
}

int64_t omdp_tbench_fused_lat(uint64_t n, uint32_t size, int64_t *lat, uint64_t *checksum)
{
    uint64_t sums[POOL];
    if (size < 8)
        return OMDP_VEGA_E_BAD_SPEC;
    uint8_t *pool = make_pool(size, sums);
    if (!pool)
        return OMDP_VEGA_E_SYS;
    uint32_t stride = (size + 63u) & ~63u;
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint8_t *p = pool + (size_t)(i & (POOL - 1)) * stride;
        int64_t t = omdp_now_ns(), arrival;
        memcpy(p, &t, 8);
        total += fused_receive(p, size, &arrival);
        lat[i] = arrival - t;
    }
    free(pool);
    *checksum = total;
    return (int64_t)n;
}

int64_t omdp_tbench_fused_tput(uint64_t n, uint32_t size, uint64_t *checksum)
{
    uint64_t sums[POOL];
    uint8_t *pool = make_pool(size, sums);
    if (!pool)
        return OMDP_VEGA_E_SYS;
    uint32_t stride = (size + 63u) & ~63u;
    uint64_t total = 0;
    int64_t t0 = omdp_now_ns();
    for (uint64_t i = 0; i < n; i++)
        total += fused_consume(pool + (size_t)(i & (POOL - 1)) * stride, size);
    int64_t dt = omdp_now_ns() - t0;
    free(pool);
    *checksum = total;
    return dt;
}
