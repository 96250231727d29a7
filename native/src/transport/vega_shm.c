/* Vega's channels: over POSIX shared memory, and over memory the caller owns (vega.h).
 *
 * The receiver creates the segment (mode 0600, O_EXCL), the sender attaches. Each side
 * records its pid and process start time; a peer whose pid is gone, a zombie, or a reused
 * pid counts as dead. Closing marks the side closed; the last side out (or the survivor
 * of a dead peer) unlinks the segment, and `omdp shm clean` removes what two dead sides
 * left behind. Also the in-process pair over caller-owned memory (`fused`, tests). The
 * other side's liveness is vega_peer.c's.
 */
#define _GNU_SOURCE
#include "omdp/vega.h"
#include "omdp/shm_region.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static int name_ok(const char *name)
{
    if (!name)
        return 0;
    size_t n = strnlen(name, OMDP_VEGA_NAME_MAX + 1);
    if (n == 0 || n > OMDP_VEGA_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && c != '.' && c != '_' && c != '-')
            return 0;
    }
    return name[0] != '.';
}

static void shm_path(char *out, const char *name)
{
    out[0] = '/';
    strcpy(out + 1, name);
}

void omdp_vega_stats(const void *base, omdp_vega_stats_t *out)
{
    const omdp_vega_ctl_t *ctl = base;
    memset(out, 0, sizeof(*out));
    out->tx_messages = atomic_load_explicit(&ctl->tx_count.messages, memory_order_relaxed);
    out->tx_bytes = atomic_load_explicit(&ctl->tx_count.bytes, memory_order_relaxed);
    out->tx_full_events = atomic_load_explicit(&ctl->tx_count.full_events, memory_order_relaxed);
    out->tx_spins = atomic_load_explicit(&ctl->tx_count.spins, memory_order_relaxed);
    out->tx_drops = atomic_load_explicit(&ctl->tx_count.drops, memory_order_relaxed);
    out->rx_messages = atomic_load_explicit(&ctl->rx_count.messages, memory_order_relaxed);
    out->rx_bytes = atomic_load_explicit(&ctl->rx_count.bytes, memory_order_relaxed);
    out->rx_spins = atomic_load_explicit(&ctl->rx_count.spins, memory_order_relaxed);
    out->rx_errors = atomic_load_explicit(&ctl->rx_count.errors, memory_order_relaxed);
    out->credit = atomic_load_explicit(&ctl->credit, memory_order_relaxed);
    out->tx_pid = atomic_load_explicit(&ctl->tx.pid, memory_order_relaxed);
    out->rx_pid = atomic_load_explicit(&ctl->rx.pid, memory_order_relaxed);
    out->tx_state = (uint32_t)omdp_vega_side_state(&ctl->tx);
    out->rx_state = (uint32_t)omdp_vega_side_state(&ctl->rx);
    out->queue_size = ctl->layout.queue_size;
    out->max_message = ctl->layout.max_message;
    out->slot_stride = ctl->layout.slot_stride;
    out->wait = ctl->layout.wait;
    out->on_full = ctl->layout.on_full;
    out->mutex = ctl->layout.mutex;
    out->created_ns = ctl->layout.created_ns;
    out->total_size = ctl->layout.total_size;
}

/* ---- rings in caller-owned memory: the in-process pair, and a mirror's two copies ---- */

int omdp_vega_region_create(void *base, uint64_t size, uint32_t queue_size, uint32_t max_message, uint32_t mutex,
                            uint32_t wait, uint32_t on_full)
{
    if (base && size >= sizeof(omdp_vega_ctl_t))
        memset(base, 0, sizeof(omdp_vega_ctl_t));
    int rc = omdp_vega_region_init(base, size, queue_size, max_message, mutex, wait, on_full);
    if (rc)
        return rc;
    atomic_store_explicit(&((omdp_vega_ctl_t *)base)->layout.magic, OMDP_VEGA_MAGIC, memory_order_release);
    return OMDP_VEGA_OK;
}

static int magic_ok(const void *base, uint64_t size)
{
    return base && size >= sizeof(omdp_vega_ctl_t) &&
           atomic_load_explicit(&((const omdp_vega_ctl_t *)base)->layout.magic, memory_order_acquire) == OMDP_VEGA_MAGIC;
}

int omdp_vega_sender_open_local(void *base, uint64_t size, omdp_vega_sender_t **out)
{
    if (!magic_ok(base, size))
        return OMDP_VEGA_E_LAYOUT;
    omdp_vega_sender_t *tx = malloc(sizeof *tx);
    if (!tx)
        return OMDP_VEGA_E_SYS;
    int rc = omdp_vega_sender_init(tx, base, size);
    if (rc) {
        free(tx);
        return rc;
    }
    tx->kind = OMDP_VEGA_REGION_LOCAL;
    tx->map_size = size;
    *out = tx;
    return OMDP_VEGA_OK;
}

int omdp_vega_receiver_open_local(void *base, uint64_t size, omdp_vega_receiver_t **out)
{
    if (!magic_ok(base, size))
        return OMDP_VEGA_E_LAYOUT;
    omdp_vega_receiver_t *rx = malloc(sizeof *rx);
    if (!rx)
        return OMDP_VEGA_E_SYS;
    int rc = omdp_vega_receiver_init(rx, base, size);
    if (rc) {
        free(rx);
        return rc;
    }
    rx->kind = OMDP_VEGA_REGION_LOCAL;
    rx->map_size = size;
    *out = rx;
    return OMDP_VEGA_OK;
}

int omdp_vega_local_pair(void *base, uint64_t size, uint32_t queue_size, uint32_t max_message,
                         uint32_t mutex, uint32_t wait, uint32_t on_full,
                         omdp_vega_sender_t **tx_out, omdp_vega_receiver_t **rx_out)
{
    int rc = omdp_vega_region_create(base, size, queue_size, max_message, mutex, wait, on_full);
    if (rc)
        return rc;
    omdp_vega_ctl_t *ctl = base;
    omdp_vega_side_claim(&ctl->tx);
    omdp_vega_side_claim(&ctl->rx);
    if ((rc = omdp_vega_sender_open_local(base, size, tx_out)))
        return rc;
    if ((rc = omdp_vega_receiver_open_local(base, size, rx_out))) {
        omdp_vega_sender_close(*tx_out);
        return rc;
    }
    return OMDP_VEGA_OK;
}

/* ---- shared memory ---- */

int omdp_vega_receiver_create_shm(const char *name, uint32_t queue_size, uint32_t max_message,
                                  uint32_t mutex, uint32_t wait, uint32_t on_full,
                                  omdp_vega_receiver_t **rx_out)
{
    if (!name_ok(name))
        return OMDP_VEGA_E_BAD_NAME;
    int rc = omdp_vega_check_knobs(queue_size, max_message, wait, on_full);
    if (rc)
        return rc;
    char path[OMDP_VEGA_NAME_MAX + 2];
    shm_path(path, name);
    uint64_t size = omdp_vega_region_size(queue_size, max_message);
    void *base = NULL;
    rc = omdp_shm_create(path, size, 1, &base, NULL);
    if (rc != 0) {
        errno = -rc;
        return rc == -EEXIST ? OMDP_VEGA_E_EXISTS : OMDP_VEGA_E_SYS;
    }
    omdp_vega_receiver_t *rx = malloc(sizeof *rx);
    if (!rx || (rc = omdp_vega_region_init(base, size, queue_size, max_message, mutex, wait, on_full)) ||
        (rc = omdp_vega_receiver_init(rx, base, size))) {
        free(rx);
        munmap(base, size);
        shm_unlink(path);
        return rc ? rc : OMDP_VEGA_E_SYS;
    }
    omdp_vega_side_claim(&rx->ctl->rx);
    atomic_store_explicit(&rx->ctl->layout.magic, OMDP_VEGA_MAGIC, memory_order_release);
    rx->kind = OMDP_VEGA_REGION_SHM;
    rx->map_size = size;
    strcpy(rx->name, name);
    *rx_out = rx;
    return OMDP_VEGA_OK;
}

/* Map a named segment whose magic is published; E_NOT_FOUND while it is being made. */
static int map_existing(const char *name, int writable, void **base_out, uint64_t *size_out)
{
    if (!name_ok(name))
        return OMDP_VEGA_E_BAD_NAME;
    char path[OMDP_VEGA_NAME_MAX + 2];
    shm_path(path, name);
    void *base = NULL;
    uint64_t size = 0;
    int rc = omdp_shm_map(path, writable, writable, sizeof(omdp_vega_ctl_t), &base, &size, NULL);
    if (rc != 0) {
        errno = -rc;
        /* not there, or created and not sized yet */
        return rc == -ENOENT || rc == -ENODATA ? OMDP_VEGA_E_NOT_FOUND : OMDP_VEGA_E_SYS;
    }
    omdp_vega_ctl_t *ctl = base;
    if (atomic_load_explicit(&ctl->layout.magic, memory_order_acquire) != OMDP_VEGA_MAGIC) {
        munmap(base, size);
        return OMDP_VEGA_E_NOT_FOUND;
    }
    *base_out = base;
    *size_out = size;
    return OMDP_VEGA_OK;
}

int omdp_vega_sender_attach_shm(const char *name, omdp_vega_sender_t **tx_out)
{
    void *base;
    uint64_t size;
    int rc = map_existing(name, 1, &base, &size);
    if (rc)
        return rc;
    omdp_vega_ctl_t *ctl = base;
    omdp_vega_sender_t *tx = malloc(sizeof *tx);
    if (!tx) {
        munmap(base, size);
        return OMDP_VEGA_E_SYS;
    }
    if ((rc = omdp_vega_sender_init(tx, base, size))) {
        free(tx);
        munmap(base, size);
        return rc;
    }
    int rx_state = omdp_vega_side_state(&ctl->rx);
    if (rx_state != OMDP_VEGA_PEER_ATTACHED) {
        pthread_mutex_destroy(&tx->lock);
        free(tx);
        munmap(base, size);
        return rx_state == OMDP_VEGA_PEER_CLOSED ? OMDP_VEGA_E_PEER_CLOSED : OMDP_VEGA_E_PEER_DEAD;
    }
    /* One sender per ring, ever: a ring whose sender left cannot be resumed (its position
     * lived in that sender). The pid field decides the race, so pid and start time are in
     * place before the state says ATTACHED: a reader never sees an attached side without
     * the pid that tells whether it still lives. */
    int64_t none = 0, me = (int64_t)getpid();
    if (atomic_load_explicit(&ctl->tx.state, memory_order_acquire) != OMDP_VEGA_PEER_ABSENT ||
        !atomic_compare_exchange_strong(&ctl->tx.pid, &none, me)) {
        pthread_mutex_destroy(&tx->lock);
        free(tx);
        munmap(base, size);
        return OMDP_VEGA_E_BUSY;
    }
    atomic_store_explicit(&ctl->tx.start_time, omdp_vega_pid_start_time(me), memory_order_relaxed);
    atomic_store_explicit(&ctl->tx.state, OMDP_VEGA_PEER_ATTACHED, memory_order_release);
    tx->kind = OMDP_VEGA_REGION_SHM;
    tx->map_size = size;
    strcpy(tx->name, name);
    *tx_out = tx;
    return OMDP_VEGA_OK;
}

/* Mark this side closed; returns 1 when the region is to be released by this side. */
static int leave_region(omdp_vega_ctl_t *ctl, omdp_vega_side_t *mine, const omdp_vega_side_t *peer, uint32_t my_bit,
                        uint32_t peer_bit)
{
    atomic_store_explicit(&mine->state, OMDP_VEGA_PEER_CLOSED, memory_order_release);
    uint32_t before = atomic_fetch_or_explicit(&ctl->closed, my_bit, memory_order_acq_rel);
    if (before & peer_bit)
        return 1;
    int peer_state = omdp_vega_side_state(peer);
    return peer_state == OMDP_VEGA_PEER_ABSENT || peer_state == OMDP_VEGA_PEER_DEAD;
}

int omdp_vega_sender_close(omdp_vega_sender_t *tx)
{
    if (!tx)
        return OMDP_VEGA_OK;
    omdp_vega_ctl_t *ctl = tx->ctl;
    int last = leave_region(ctl, &ctl->tx, &ctl->rx, OMDP_VEGA_CLOSED_TX, OMDP_VEGA_CLOSED_RX);
    omdp_vega_wake_receiver(ctl);
    if (tx->kind == OMDP_VEGA_REGION_SHM) {
        munmap(tx->base, tx->map_size);
        if (last) {
            char path[OMDP_VEGA_NAME_MAX + 2];
            shm_path(path, tx->name);
            shm_unlink(path);
        }
    }
    pthread_mutex_destroy(&tx->lock);
    free(tx);
    return OMDP_VEGA_OK;
}

int omdp_vega_receiver_close(omdp_vega_receiver_t *rx)
{
    if (!rx)
        return OMDP_VEGA_OK;
    omdp_vega_ctl_t *ctl = rx->ctl;
    int last = leave_region(ctl, &ctl->rx, &ctl->tx, OMDP_VEGA_CLOSED_RX, OMDP_VEGA_CLOSED_TX);
    omdp_vega_wake_sender(ctl);
    if (rx->kind == OMDP_VEGA_REGION_SHM) {
        munmap(rx->base, rx->map_size);
        if (last) {
            char path[OMDP_VEGA_NAME_MAX + 2];
            shm_path(path, rx->name);
            shm_unlink(path);
        }
    }
    free(rx->released);
    free(rx);
    return OMDP_VEGA_OK;
}

int omdp_vega_stats_shm(const char *name, omdp_vega_stats_t *out)
{
    void *base;
    uint64_t size;
    int rc = map_existing(name, 0, &base, &size);
    if (rc)
        return rc;
    omdp_vega_stats(base, out);
    munmap(base, size);
    return OMDP_VEGA_OK;
}

int omdp_vega_unlink_shm(const char *name)
{
    if (!name_ok(name))
        return OMDP_VEGA_E_BAD_NAME;
    char path[OMDP_VEGA_NAME_MAX + 2];
    shm_path(path, name);
    if (shm_unlink(path) != 0)
        return errno == ENOENT ? OMDP_VEGA_E_NOT_FOUND : OMDP_VEGA_E_SYS;
    return OMDP_VEGA_OK;
}
