/* The feed handler's side of re-sharding (feed_handler.h, reshard.h): each bucket's engine,
 * and at a point in this handler's stream - between two polls, nothing held - the switch of
 * a bucket's route with its markers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omdp/stamp_clock.h"
#include "feed_handler_internal.h"

int omdp_fh_reshard_open(feed_handler_t *fh, omdp_reshard_seg_t *seg, uint32_t replica, const omdp_fh_route_t *routes,
                         uint32_t n_routes, char *err, size_t errlen)
{
    omdp_reshard_totals_t t;
    omdp_reshard_totals(seg, &t);
    if (t.n_engines != fh->n_engines) {
        snprintf(err, errlen, "the segment has %u engines, the handler %u", t.n_engines, fh->n_engines);
        return OMDP_ERR_PARAMS;
    }
    if (replica >= t.n_fh) {
        snprintf(err, errlen, "feed handler %u of the segment's %u", replica, t.n_fh);
        return OMDP_ERR_PARAMS;
    }
    fh->bucket_engine = malloc(t.buckets * sizeof *fh->bucket_engine);
    if (!fh->bucket_engine) {
        snprintf(err, errlen, "out of memory");
        return OMDP_ERR_NOMEM;
    }
    /* a handler starting after moves (none in a run: moves begin once the replay runs) takes
     * the owners as they are now */
    fh->moves_applied = t.requested;
    for (uint32_t b = 0; b < t.buckets; b++)
        fh->bucket_engine[b] = (uint16_t)(t.requested ? omdp_reshard_owner(seg, b) : omdp_reshard_home(seg, b));
    fh->bucket_mask = t.buckets - 1u;
    for (uint32_t i = 0; i < n_routes; i++) {
        uint32_t b = routes[i].underlying_id & fh->bucket_mask;
        if (routes[i].underlying_id != OMDP_NO_UNDERLYING && routes[i].engine != omdp_reshard_home(seg, b)) {
            snprintf(err, errlen, "route %u (root %.6s, underlying %u) is on engine %u, but its bucket %u's home is "
                     "engine %u: with re-sharding the routing is by bucket", i, routes[i].root,
                     routes[i].underlying_id, routes[i].engine, b, omdp_reshard_home(seg, b));
            free(fh->bucket_engine);
            fh->bucket_engine = NULL;
            return OMDP_ERR_PARAMS;
        }
    }
    fh->reshard = seg;
    omdp_reshard_attach(seg);
    fh->fh_index = replica;
    fh->n_fh = t.n_fh;
    return OMDP_OK;
}

static int emit_marker(feed_handler_t *fh, uint64_t id, uint32_t bucket, uint32_t from, uint32_t to, uint32_t port,
                       const omdp_emitter_t *em)
{
    omdp_reshard_marker_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = OMDP_RT_RESHARD;
    m.hdr.length = sizeof m;
    m.hdr.stamps.fh_out = omdp_stamp_ns();
    m.move_id = id;
    m.fh_packets = fh->packet_index;
    m.fh_messages = fh->routed;
    m.bucket = bucket;
    m.buckets = fh->bucket_mask + 1u;
    m.from = (uint16_t)from;
    m.to = (uint16_t)to;
    m.fh = (uint16_t)fh->fh_index;
    m.n_fh = (uint16_t)fh->n_fh;
    fh->markers_sent++;
    return omdp_emit(em, port, (const uint8_t *)&m, sizeof m);
}

int omdp_fh_reshard_apply(feed_handler_t *fh, const omdp_emitter_t *em)
{
    int rc = omdp_fh_flush(fh, em); /* nothing is held between polls; this keeps it so */
    if (rc < 0)
        return rc;
    uint64_t upto = omdp_reshard_requested(fh->reshard);
    while (fh->moves_applied < upto) {
        uint64_t id = fh->moves_applied + 1;
        uint32_t bucket, to;
        fh->moves_applied = id;
        if (omdp_reshard_request_of(fh->reshard, id, &bucket, &to) < 0 || bucket > fh->bucket_mask ||
            to >= fh->n_engines || fh->bucket_engine[bucket] == to) {
            fh->moves_bad++; /* not in the log any more, or nothing to move: no markers */
            continue;
        }
        uint32_t from = fh->bucket_engine[bucket];
        /* the old engine's marker first: in a fused partition it exports before the new one looks */
        if ((rc = emit_marker(fh, id, bucket, from, to, from, em)) < 0 ||
            (rc = emit_marker(fh, id, bucket, from, to, to, em)) < 0)
            return rc;
        fh->bucket_engine[bucket] = (uint16_t)to;
        fh->route_found = FH_ROUTE_NONE; /* the cached answer may be the old engine */
    }
    return OMDP_OK;
}
