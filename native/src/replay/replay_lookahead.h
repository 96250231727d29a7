/* Private to the pacing loop: asking the caches, a few packets ahead, for the memory that
 * sending a packet touches.
 *
 * On a bursty schedule the loop's pacing error is a queue: each packet of a microburst waits
 * for the ones before it, so the error grows with the loop's cost per packet, and most of
 * that cost is cache misses, not instructions: the packet's bytes in the capture file, the
 * ring slot the consumer's core read last, the sent-log entry and the intended-table entry
 * (both cold: the service reads them from another core, megabytes later). The loop issues
 * prefetches for packet i + LOOKAHEAD_PACKETS as it handles packet i, and for the next
 * packets while it spins before a deadline, so those misses overlap the work in between.
 * Prefetches never fault; addresses are still bounds-checked before they are formed.
 */
#ifndef OMDP_REPLAY_LOOKAHEAD_H
#define OMDP_REPLAY_LOOKAHEAD_H

#include <stdint.h>

#include "omdp/replay.h"
#include "replay_sink.h"

#define LOOKAHEAD_PACKETS 4   /* how far ahead of its position the loop prefetches */

typedef struct lookahead {
    const omdp_replay_run_args_t *a;
    const omdp_replay_pkt_t *pkts;
    uint64_t n;                    /* packets in a lap */
    uint32_t frames_per_packet;    /* copies sent */
    omdp_replay_sent_t *log_entries;
    uint64_t log_mask;
    uint64_t next;                 /* lap position of the next packet to prefetch; may pass n (next lap) */
    uint64_t next_seq[OMDP_REPLAY_MAX_LINE + 1];   /* each line's expected next block sequence */
} lookahead_t;

static inline void lookahead_init(lookahead_t *la, const omdp_replay_run_args_t *a, omdp_replay_sent_t *log_entries,
                                  uint32_t frames_per_packet)
{
    *la = (lookahead_t){.a = a, .pkts = a->pkts, .n = a->n_pkts, .frames_per_packet = frames_per_packet,
                        .log_entries = log_entries, .log_mask = a->log ? a->log->capacity - 1 : 0};
}

/* Lines of [p, p + len) for reading. */
static inline void prefetch_read(const uint8_t *p, uint32_t len)
{
    const uintptr_t first = (uintptr_t)p & ~(uintptr_t)(OMDP_REPLAY_LINE - 1);
    for (uintptr_t q = first; q < (uintptr_t)p + len; q += OMDP_REPLAY_LINE)
        __builtin_prefetch((const void *)q, 0, 3);
}

/* Everything packet p will touch; `ahead`: packets between the loop's position and p. */
static inline void lookahead_packet(const lookahead_t *la, const omdp_replay_pkt_t *p, uint32_t ahead, uint64_t log_head)
{
    const omdp_replay_run_args_t *a = la->a;
    if (p->src < a->n_sources && p->len <= a->sources[p->src].size && p->src_off <= a->sources[p->src].size - p->len)
        prefetch_read(a->sources[p->src].base + p->src_off, p->len);
    if (p->b_len && p->b_src < a->n_sources && p->b_len <= a->sources[p->b_src].size &&
        p->b_off <= a->sources[p->b_src].size - p->b_len)
        prefetch_read(a->sources[p->b_src].base + p->b_off, p->b_len);
    if (a->sink_kind == OMDP_REPLAY_SINK_RING)
        omdp_replay_ring_prefetch((const omdp_replay_ring_sink_t *)a->sink, ahead * la->frames_per_packet, p->len);
    if (la->log_entries) {
        const omdp_replay_sent_t *e = &la->log_entries[(log_head + ahead) & la->log_mask];
        __builtin_prefetch(e, 1, 3);
        __builtin_prefetch((const uint8_t *)e + sizeof *e - 1, 1, 3);
    }
    if (a->intended && p->line >= 1 && p->line <= a->intended->max_line)
        __builtin_prefetch(omdp_replay_intended_entry(a->intended, p->line, la->next_seq[p->line]), 1, 3);
}

/* Prefetches every packet up to lap position `upto` not yet prefetched; `pos` is the loop's. */
static inline void lookahead_upto(lookahead_t *la, uint64_t pos, uint64_t upto, uint64_t log_head)
{
    if (la->next < pos)
        la->next = pos;
    for (; la->next <= upto; la->next++) {
        uint64_t k = la->next;
        if (k >= la->n) {
            if (!la->a->loop || k - la->n >= la->n)
                return;
            k -= la->n;
        }
        lookahead_packet(la, &la->pkts[k], (uint32_t)(la->next - pos), log_head);
    }
}

/* A lap ends: positions restart at 0. */
static inline void lookahead_new_lap(lookahead_t *la)
{
    la->next = la->next >= la->n ? la->next - la->n : 0;
}

/* A packet of `line` went out as block sequence `seq` with `messages` messages. */
static inline void lookahead_sent(lookahead_t *la, uint16_t line, uint64_t seq, uint16_t messages)
{
    la->next_seq[line] = seq + messages;
}

#endif /* OMDP_REPLAY_LOOKAHEAD_H */
