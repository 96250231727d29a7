/* The record chain of a classic pcap (pcap_walk.h). */
#include "omdp/pcap_walk.h"

static inline uint32_t field(const uint8_t *p, int big_endian)
{
    return big_endian ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                      : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

int64_t omdp_pcap_walk(const uint8_t *buf, uint64_t size, int big_endian, int64_t *offs, int64_t *lens, int64_t *secs,
                       int64_t *fracs, uint64_t max, uint64_t *end)
{
    if (!buf || !end || size < OMDP_PCAP_GLOBAL_HEADER_LEN || (max && (!offs || !lens || !secs || !fracs)))
        return -1;
    uint64_t pos = OMDP_PCAP_GLOBAL_HEADER_LEN, n = 0;
    while (size - pos >= OMDP_PCAP_RECORD_HEADER_LEN) {
        const uint8_t *h = buf + pos;
        uint64_t incl = field(h + 8, big_endian);
        uint64_t data = pos + OMDP_PCAP_RECORD_HEADER_LEN;
        if (incl > size - data)
            break;
        if (n < max) {
            offs[n] = (int64_t)data;
            lens[n] = (int64_t)incl;
            secs[n] = field(h, big_endian);
            fracs[n] = field(h + 4, big_endian);
        }
        n++;
        pos = data + incl;
    }
    *end = pos;
    return (int64_t)n;
}
