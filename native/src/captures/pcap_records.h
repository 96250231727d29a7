/* The classic pcap record chain, one record at a time: shared by the plain walk
 * (pcap_walk.c) and the walk that also finds each frame's UDP payload (pcap_udp.c), so the
 * two agree on where a chain ends. Private to src/captures/. */
#ifndef OMDP_PCAP_RECORDS_H
#define OMDP_PCAP_RECORDS_H

#include "omdp/pcap_walk.h"

/* A record header's 32-bit field in the file's byte order. */
static inline uint32_t pcap_field(const uint8_t *p, int big_endian)
{
    return big_endian ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                      : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

typedef struct pcap_record {
    const uint8_t *hdr; /* the 16-byte record header */
    uint64_t data;      /* offset of the captured bytes in the file */
    uint64_t incl;      /* captured length */
} pcap_record_t;

/* The record at *pos, and *pos moved past it; 0 at the chain's end (fewer bytes left than a
 * header, or a record whose captured bytes run past the file: a truncated last record). */
static inline int pcap_next_record(const uint8_t *buf, uint64_t size, int big_endian, uint64_t *pos, pcap_record_t *r)
{
    if (size - *pos < OMDP_PCAP_RECORD_HEADER_LEN)
        return 0;
    r->hdr = buf + *pos;
    r->incl = pcap_field(r->hdr + 8, big_endian);
    r->data = *pos + OMDP_PCAP_RECORD_HEADER_LEN;
    if (r->incl > size - r->data)
        return 0;
    *pos = r->data + r->incl;
    return 1;
}

#endif
