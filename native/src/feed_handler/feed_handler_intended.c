/* The replayer's intended-time tables as the feed handler sees them (omdp/replay.h): mapped
 * once the replayer has made them, looked up per packet by feed_handler_packet.c, unmapped
 * at close. */
#include <stdint.h>

#include "omdp/clock.h"
#include "feed_handler_internal.h"

/* Map the tables the replayer has made since the last look (it makes them when it starts). */
static void attach_tables(feed_handler_t *fh, int64_t now)
{
    fh->next_table_try_ns = now + FH_TABLE_RETRY_NS;
    for (uint32_t t = 0; t < fh->n_tables; t++) {
        fh_table_t *tab = &fh->tables[t];
        if (tab->hdr)
            continue;
        char err[128];
        uint64_t size = 0;
        void *base = omdp_replay_shm_open(tab->name, &size, 0, err, sizeof err);
        if (!base)
            continue;
        const omdp_replay_intended_header_t *h = base;
        int ok = size >= sizeof *h && atomic_load_explicit(OMDP_REPLAY_ATOMIC(&h->magic), memory_order_acquire) == OMDP_REPLAY_INTENDED_MAGIC &&
                 h->version == OMDP_REPLAY_VERSION && h->capacity && !(h->capacity & (h->capacity - 1)) &&
                 omdp_replay_intended_size(h->max_line, h->capacity) == size;
        if (!ok) {
            omdp_replay_shm_unmap(base, size); /* not (yet) a table of this version: look again later */
            continue;
        }
        tab->hdr = h;
        tab->size = size;
        fh->tables_missing--;
    }
}

int64_t omdp_fh_intended_lookup(feed_handler_t *fh, fh_line_t *l, uint64_t block_seq)
{
    fh_table_t *tab = &fh->tables[l->table];
    if (!tab->hdr && fh->tables_missing) {
        int64_t now = omdp_now_ns();
        if (now >= fh->next_table_try_ns)
            attach_tables(fh, now);
    }
    int64_t v = 0;
    if (tab->hdr && block_seq && omdp_replay_intended_lookup(tab->hdr, l->line, block_seq, &v)) {
        fh->intended_found++;
        return v;
    }
    fh->intended_missing++;
    return 0;
}

uint64_t omdp_fh_line_end(feed_handler_t *fh, const fh_line_t *l, int last)
{
    if (l->table < 0)
        return 0;
    fh_table_t *tab = &fh->tables[l->table];
    if (!tab->hdr && fh->tables_missing)
        attach_tables(fh, omdp_now_ns());
    if (!tab->hdr || l->line == 0 || l->line > tab->hdr->max_line)
        return 0;
    const omdp_replay_line_end_t *e = &omdp_replay_intended_ends(tab->hdr)[l->line];
    return atomic_load_explicit(OMDP_REPLAY_ATOMIC(last ? &e->last_end : &e->lap_end), memory_order_acquire);
}

void omdp_fh_count_tails(feed_handler_t *fh)
{
    for (uint32_t i = 0; i < fh->n_lines; i++) {
        fh_line_t *l = &fh->lines[i];
        uint64_t end = omdp_fh_line_end(fh, l, 1);
        if (l->arb.started && end > l->arb.next) {
            l->arb.missed += end - l->arb.next;
            l->arb.next = end;
        }
        omdp_fh_obi_arb_finish(&l->obi); /* OBI: a gap still pending is lost, then the tail */
        if (l->obi.known && end > l->obi.next) {
            l->obi.missed += end - l->obi.next;
            l->obi.next = end;
        }
    }
}

void omdp_fh_tables_close(feed_handler_t *fh)
{
    for (uint32_t t = 0; t < fh->n_tables; t++) {
        if (fh->tables[t].hdr)
            omdp_replay_shm_unmap((void *)fh->tables[t].hdr, fh->tables[t].size);
        fh->tables[t].hdr = NULL;
    }
}
