/* A/B arbitration, gaps and sequence resets of one OPRA line (feed_handler.h). */
#include "omdp/feed_handler.h"

#include <string.h>

void omdp_fh_arb_init(omdp_fh_arb_t *a)
{
    memset(a, 0, sizeof *a);
}

static inline uint32_t copy_of(uint32_t copy)
{
    return copy == 0 ? 0 : 1;
}

int omdp_fh_arb_packet_is_duplicate(const omdp_fh_arb_t *a, uint32_t copy, uint64_t block_seq, uint32_t count)
{
    /* Only a line whose block sequences are known to be first-message sequences, in the
     * current reset epoch of this copy, and never a lone message (it may be a reset). */
    if (!a->started || a->blocks != OMDP_FH_BLOCKS_TRACK || count < 2 || block_seq == 0)
        return 0;
    if (a->copy_epoch[copy_of(copy)] != a->epoch)
        return 0;
    return block_seq + count <= a->next;
}

void omdp_fh_arb_observe_block(omdp_fh_arb_t *a, uint64_t block_seq, uint64_t first_msg_seq)
{
    if (a->blocks == OMDP_FH_BLOCKS_OTHER)
        return;
    a->blocks = block_seq == first_msg_seq && block_seq != 0 ? OMDP_FH_BLOCKS_TRACK : OMDP_FH_BLOCKS_OTHER;
}

int omdp_fh_arb_message(omdp_fh_arb_t *a, uint32_t copy, uint64_t msg_seq, int is_reset)
{
    uint32_t c = copy_of(copy);
    if (is_reset) {
        a->copy_epoch[c]++;
        if (a->copy_epoch[c] <= a->epoch) {
            a->duplicates++; /* the other copy brought this reset already */
            return OMDP_FH_DUPLICATE;
        }
        a->epoch = a->copy_epoch[c];
        if (a->started && a->lap_end > a->next)
            a->missed += a->lap_end - a->next; /* the closed lap's tail never came */
        a->next = msg_seq + 1;
        a->started = 1;
        a->resets++;
        a->accepted++;
        return OMDP_FH_RESET;
    }
    if (a->copy_epoch[c] < a->epoch) {
        a->duplicates++; /* this copy has not reached the reset the line is past */
        return OMDP_FH_DUPLICATE;
    }
    if (!a->started) {
        a->started = 1;
    } else if (msg_seq < a->next) {
        a->duplicates++;
        return OMDP_FH_DUPLICATE;
    } else if (msg_seq > a->next) {
        a->missed += msg_seq - a->next;
    }
    a->next = msg_seq + 1;
    a->accepted++;
    return OMDP_FH_ACCEPT;
}
