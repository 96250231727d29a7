/* The record chain of a classic pcap (pcap_walk.h). */
#include "pcap_records.h"

int64_t omdp_pcap_walk(const uint8_t *buf, uint64_t size, int big_endian, int64_t *offs, int64_t *lens, int64_t *secs,
                       int64_t *fracs, uint64_t max, uint64_t *end)
{
    if (!buf || !end || size < OMDP_PCAP_GLOBAL_HEADER_LEN || (max && (!offs || !lens || !secs || !fracs)))
        return -1;
    uint64_t pos = OMDP_PCAP_GLOBAL_HEADER_LEN, n = 0;
    pcap_record_t r;
    while (pcap_next_record(buf, size, big_endian, &pos, &r)) {
        if (n < max) {
            offs[n] = (int64_t)r.data;
            lens[n] = (int64_t)r.incl;
            secs[n] = pcap_field(r.hdr, big_endian);
            fracs[n] = pcap_field(r.hdr + 4, big_endian);
        }
        n++;
    }
    *end = pos;
    return (int64_t)n;
}
