/* A/B arbitration and gap detection of one OBI v6 line: the spec's recommended receiver
 * (opra-binary.md 9.2), with its rule that a gap is a loss only once both streams passed
 * it (feed_handler.h, "OBI v6: arbitration and gaps"). */
#include "omdp/feed_handler.h"

#include <string.h>

#include "omdp/opra_obi.h"

#define OBI_CATEGORY_OFF 22 /* the first message's category (header 21 + participant) */

static inline uint32_t copy_of(uint32_t copy)
{
    return copy == 0 ? 0 : 1;
}

void omdp_fh_obi_arb_init(omdp_fh_obi_arb_t *a)
{
    memset(a, 0, sizeof *a);
    a->gap_timeout_ns = OMDP_FH_OBI_GAP_TIMEOUT_NS;
}

/* Pending gap g is lost: neither stream will bring it now. */
static void drop_gap(omdp_fh_obi_arb_t *a, uint32_t g, int lost)
{
    if (lost)
        a->missed += a->gaps[g].hi - a->gaps[g].lo;
    for (uint32_t k = g + 1; k < a->n_gaps; k++)
        a->gaps[k - 1] = a->gaps[k];
    a->n_gaps--;
}

static void declare_all_lost(omdp_fh_obi_arb_t *a)
{
    while (a->n_gaps)
        drop_gap(a, 0, 1);
}

/* Stream `c` jumped from `next` to `to`: [next, to) is pending until the other stream
 * passes it. When OMDP_FH_OBI_GAPS are pending the oldest is declared lost. */
static void open_gap(omdp_fh_obi_arb_t *a, uint32_t c, uint64_t to)
{
    if (a->n_gaps == OMDP_FH_OBI_GAPS)
        drop_gap(a, 0, 1);
    a->gaps[a->n_gaps++] = (omdp_fh_obi_gap_t){.lo = a->next, .hi = to, .copy = c, .opened_ns = a->now_ns};
}

/* The spec's "short timeout" (opra-binary.md 9.2): a gap the other stream has not filled
 * within gap_timeout_ns of opening is a loss. Gaps open in clock order, so the oldest are
 * first. */
void omdp_fh_obi_arb_expire(omdp_fh_obi_arb_t *a, int64_t now_ns)
{
    if (now_ns > a->now_ns)
        a->now_ns = now_ns;
    if (a->gap_timeout_ns <= 0)
        return;
    while (a->n_gaps && a->now_ns - a->gaps[0].opened_ns >= a->gap_timeout_ns) {
        a->timed_out += a->gaps[0].hi - a->gaps[0].lo;
        drop_gap(a, 0, 1);
    }
}

/* H C and H K: the line's numbering restarts at `next`. */
static void restart(omdp_fh_obi_arb_t *a, uint64_t next)
{
    declare_all_lost(a);
    a->next = next;
    a->known = 1;
    a->resets++;
}

int omdp_fh_obi_arb_control(omdp_fh_obi_arb_t *a, uint32_t copy, uint8_t type, uint64_t block_seq, uint32_t ts_sec,
                            uint32_t ts_nsec)
{
    uint32_t c = copy_of(copy);
    /* A stream never repeats a block, so only a block not yet seen on this stream can be its
     * copy; once both streams brought it, it is forgotten (a later one of the same content,
     * as a replay's next lap sends, is new). */
    const uint8_t bit = (uint8_t)(1u << c);
    for (uint32_t k = 0; k < OMDP_FH_OBI_CTL_KEYS; k++) {
        omdp_fh_obi_ctl_key_t *q = &a->ctl[k];
        if (q->seen && !(q->seen & bit) && q->type == type && q->block_seq == (uint32_t)block_seq &&
            q->ts_sec == ts_sec && q->ts_nsec == ts_nsec) {
            q->seen = 0; /* both copies in */
            if (type != 'N')
                a->duplicates++; /* the other stream's copy of a delivered message */
            return OMDP_FH_DUPLICATE;
        }
    }
    omdp_fh_obi_ctl_key_t *slot = &a->ctl[a->ctl_next++ % OMDP_FH_OBI_CTL_KEYS];
    *slot = (omdp_fh_obi_ctl_key_t){.block_seq = (uint32_t)block_seq, .ts_sec = ts_sec, .ts_nsec = ts_nsec,
                                    .type = type, .seen = bit};
    switch (type) {
    case 'C': /* start of day: the first message after it is number 1 (spec Q5) */
        restart(a, 1);
        a->accepted++;
        return OMDP_FH_RESET;
    case 'K': /* reset block sequence: the next block is numbered one above it */
        restart(a, block_seq + 1);
        a->accepted++;
        return OMDP_FH_RESET;
    case 'N': /* line integrity: the last MSN sent; uses no number, delivers nothing */
        if (a->known && block_seq >= a->next)
            open_gap(a, c, block_seq + 1);
        if (!a->known || block_seq >= a->next) {
            a->next = block_seq + 1;
            a->known = 1;
        }
        return OMDP_FH_INTEGRITY;
    default: /* E F J L M P: delivered; only a number above next reports a loss (spec Q3) */
        if (a->known && block_seq > a->next)
            open_gap(a, c, block_seq);
        if (!a->known || block_seq >= a->next) {
            a->next = block_seq + 1;
            a->known = 1;
        }
        a->accepted++;
        return OMDP_FH_ACCEPT;
    }
}

uint32_t omdp_fh_obi_arb_data(omdp_fh_obi_arb_t *a, uint32_t copy, uint64_t block_seq, uint32_t count,
                              uint32_t range[2 * OMDP_FH_OBI_RANGES])
{
    uint32_t c = copy_of(copy);
    uint64_t s = block_seq, end = block_seq + count;
    uint32_t nr = 0, delivered = 0;
    if (count == 0)
        return 0; /* an empty block uses no numbers (spec Q8) */
    if (!a->known) {
        a->next = s; /* joining mid-day */
        a->known = 1;
    }
    /* The gaps the other stream jumped: this stream passed them (lost), or fills them. */
    for (uint32_t g = 0; g < a->n_gaps && nr + 1 < OMDP_FH_OBI_RANGES;) {
        omdp_fh_obi_gap_t *gp = &a->gaps[g];
        if (gp->copy == c || gp->lo >= end) {
            g++;
            continue;
        }
        if (gp->hi <= s) {
            drop_gap(a, g, 1);
            continue;
        }
        if (s > gp->lo) {
            a->missed += s - gp->lo; /* this stream lost these too */
            gp->lo = s;
        }
        uint64_t hi = end < gp->hi ? end : gp->hi;
        range[2 * nr] = (uint32_t)(gp->lo - s);
        range[2 * nr + 1] = (uint32_t)(hi - s);
        nr++;
        delivered += (uint32_t)(hi - gp->lo);
        a->filled += hi - gp->lo;
        gp->lo = hi;
        if (gp->lo >= gp->hi)
            drop_gap(a, g, 0);
        else
            g++;
    }
    if (end <= a->next) {
        /* already delivered from the other stream (but for gaps filled above) */
    } else if (s > a->next) {
        open_gap(a, c, s);
        range[2 * nr] = 0;
        range[2 * nr + 1] = count;
        nr++;
        delivered += count;
        a->next = end;
    } else {
        range[2 * nr] = (uint32_t)(a->next - s);
        range[2 * nr + 1] = count;
        nr++;
        delivered += (uint32_t)(end - a->next);
        a->next = end;
    }
    a->accepted += delivered;
    a->duplicates += count - delivered;
    return nr;
}

uint32_t omdp_fh_obi_arb_block(omdp_fh_obi_arb_t *a, uint32_t copy, const omdp_opra_msg_t *recs, uint32_t n,
                               uint64_t block_seq, uint32_t ts_sec, uint32_t ts_nsec,
                               uint32_t range[2 * OMDP_FH_OBI_RANGES], int *result)
{
    if (n == 1 && recs[0].category == 'H') {
        *result = omdp_fh_obi_arb_control(a, copy, recs[0].msg_type, block_seq, ts_sec, ts_nsec);
        if (*result == OMDP_FH_DUPLICATE || *result == OMDP_FH_INTEGRITY)
            return 0;
        range[0] = 0;
        range[1] = 1;
        return 1;
    }
    *result = OMDP_FH_ACCEPT;
    return omdp_fh_obi_arb_data(a, copy, block_seq, n, range);
}

void omdp_fh_obi_arb_finish(omdp_fh_obi_arb_t *a)
{
    declare_all_lost(a);
}

int omdp_fh_obi_arb_is_behind(const omdp_fh_obi_arb_t *a, const uint8_t *blk, size_t len)
{
    uint64_t s;
    uint32_t n;
    omdp_obi_header_peek(blk, len, &s, &n);
    if (!a->known || n == 0 || s + n > a->next || len <= OBI_CATEGORY_OFF)
        return 0;
    if (n == 1 && blk[OBI_CATEGORY_OFF] == 'H')
        return 0;
    for (uint32_t g = 0; g < a->n_gaps; g++)
        if (s + n > a->gaps[g].lo && s < a->gaps[g].hi)
            return 0;
    return 1;
}
