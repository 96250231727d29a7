/* The pcap record-chain walk of pcap_walk.h. */
#include "omdp/pcap_walk.h"

#include <stddef.h>
#include <string.h>

static uint32_t field_u32(const uint8_t *p, int big_endian) {
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return big_endian ? __builtin_bswap32(v) : v;
}

int64_t omdp_pcap_walk(const uint8_t *buf, uint64_t size, int big_endian, int64_t *data_off, int64_t *incl_len,
                       int64_t *ts_sec, int64_t *ts_frac, uint64_t cap, uint64_t *stop) {
    if (buf == NULL || stop == NULL || size < OMDP_PCAP_GLOBAL_HEADER_LEN)
        return -1;
    const int fill = data_off != NULL;
    if (fill && (incl_len == NULL || ts_sec == NULL || ts_frac == NULL))
        return -1;
    uint64_t pos = OMDP_PCAP_GLOBAL_HEADER_LEN;
    uint64_t n = 0;
    while (size - pos >= OMDP_PCAP_RECORD_HEADER_LEN && (!fill || n < cap)) {
        const uint8_t *h = buf + pos;
        const uint64_t incl = field_u32(h + 8, big_endian);
        const uint64_t data = pos + OMDP_PCAP_RECORD_HEADER_LEN;
        if (incl > size - data)
            break; /* its captured bytes run past the end: a writer that died mid-record */
        if (fill) {
            data_off[n] = (int64_t)data;
            incl_len[n] = (int64_t)incl;
            ts_sec[n] = field_u32(h, big_endian);
            ts_frac[n] = field_u32(h + 4, big_endian);
        }
        n++;
        pos = data + incl;
    }
    *stop = pos;
    return (int64_t)n;
}
