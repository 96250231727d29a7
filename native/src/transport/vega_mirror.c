/* Pieces shared by the mirrored Vega media (vega_mirror.h). */
#include "omdp/vega_mirror.h"


static omdp_vega_side_t *peer_side(omdp_vega_ctl_t *ctl, int role)
{
    return role == OMDP_VEGA_MIRROR_SENDER ? &ctl->rx : &ctl->tx;
}

void omdp_vega_mirror_window(const void *base, int role, uint64_t *lo, uint64_t *hi)
{
    const omdp_vega_ctl_t *ctl = base;
    if (role == OMDP_VEGA_MIRROR_SENDER) {
        *lo = offsetof(omdp_vega_ctl_t, credit);
        *hi = *lo + sizeof(uint64_t);
    } else {
        *lo = ctl->layout.slots_offset;
        *hi = ctl->layout.total_size;
    }
}

static void store_release(uint8_t *dst, const uint8_t *src)
{
    uint64_t v;
    memcpy(&v, src, sizeof v);
    atomic_store_explicit((_Atomic uint64_t *)dst, v, memory_order_release);
}

int omdp_vega_mirror_apply(void *base, uint64_t size, int role, uint64_t offset, const void *src, uint32_t len)
{
    uint64_t lo, hi;
    omdp_vega_mirror_window(base, role, &lo, &hi);
    if (hi > size)
        hi = size;
    if (len == 0 || (len & 7u) || (offset & 7u))
        return OMDP_VEGA_MIRROR_E_ALIGN;
    if (offset < lo || offset > hi || len > hi - offset)
        return OMDP_VEGA_MIRROR_E_WINDOW;
    uint8_t *dst = (uint8_t *)base + offset;
    const uint8_t *s = src;
    /* begin word first (release: a scrub applied before it is visible to whoever sees it),
     * payload, end word last (release: whoever sees it sees the payload) */
    store_release(dst, s);
    if (len > 8) {
        if (len > 16)
            memcpy(dst + 8, s + 8, len - 16);
        store_release(dst + len - 8, s + len - 8);
    }
    omdp_vega_ctl_t *ctl = base;
    omdp_vega_wake_t *w = role == OMDP_VEGA_MIRROR_SENDER ? &ctl->credit_wake : &ctl->data_wake;
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&w->waiting, memory_order_relaxed)) {
        if (role == OMDP_VEGA_MIRROR_SENDER)
            omdp_vega_wake_sender(ctl);
        else
            omdp_vega_wake_receiver(ctl);
    }
    return OMDP_VEGA_MIRROR_OK;
}

int omdp_vega_mirror_copy_layout(void *base, uint64_t size, const omdp_vega_layout_t *layout)
{
    if (!base || size < sizeof(omdp_vega_ctl_t) || ((uintptr_t)base & (OMDP_VEGA_SPAN - 1)))
        return OMDP_VEGA_E_LAYOUT;
    omdp_vega_ctl_t *ctl = base;
    omdp_vega_layout_t l = *layout;
    l.magic = 0;
    memcpy(&ctl->layout, &l, sizeof l);
    if (l.total_size != size || l.total_size != omdp_vega_region_size(l.queue_size, l.max_message) ||
        omdp_vega_check_knobs(l.queue_size, l.max_message, l.wait, l.on_full) != OMDP_VEGA_OK)
        return OMDP_VEGA_E_LAYOUT;
    atomic_store_explicit(&ctl->layout.magic, OMDP_VEGA_MAGIC, memory_order_release);
    return OMDP_VEGA_OK;
}

void omdp_vega_mirror_claim(void *base, int role)
{
    omdp_vega_ctl_t *ctl = base;
    omdp_vega_side_claim(role == OMDP_VEGA_MIRROR_SENDER ? &ctl->tx : &ctl->rx);
}

void omdp_vega_mirror_set_peer(void *base, int role, uint32_t state)
{
    omdp_vega_ctl_t *ctl = base;
    omdp_vega_side_t *peer = peer_side(ctl, role);
    uint32_t cur = atomic_load_explicit(&peer->state, memory_order_acquire);
    while (cur != OMDP_VEGA_PEER_CLOSED && cur != OMDP_VEGA_PEER_DEAD && cur != state &&
           !atomic_compare_exchange_weak_explicit(&peer->state, &cur, state, memory_order_acq_rel,
                                                  memory_order_acquire))
        ;
    omdp_vega_wake_receiver(ctl);
    omdp_vega_wake_sender(ctl);
}

uint32_t omdp_vega_mirror_peer(const void *base, int role)
{
    omdp_vega_ctl_t *ctl = (omdp_vega_ctl_t *)base;
    return atomic_load_explicit(&peer_side(ctl, role)->state, memory_order_acquire);
}
