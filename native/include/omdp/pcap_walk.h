/* The record chain of a classic pcap file (feedhandlers/captures/pcap.py reads the rest):
 * a 24-byte global header, then records of a 16-byte header (seconds, fraction, captured
 * length, original length) and the captured bytes. One C pass, where a Python loop cost a
 * replay's decode task a tenth of its time. */
#ifndef OMDP_PCAP_WALK_H
#define OMDP_PCAP_WALK_H

#include <stdint.h>

#define OMDP_PCAP_GLOBAL_HEADER_LEN 24
#define OMDP_PCAP_RECORD_HEADER_LEN 16

/* Follows the chain of the `size` bytes at `buf` from offset 24, fields in big-endian order
 * when big_endian is set. For each whole record (header and captured bytes inside the
 * buffer), while fewer than max are written: its data offset, captured length, seconds and
 * fraction fields into offs, lens, secs, fracs. *end = the offset where the chain stops
 * (size when the last record ends the file; else the start of a cut-off record or of fewer
 * than 16 bytes). Returns the number of whole records (count them with max 0, then call
 * again with room), or -1 for a NULL argument or a buffer shorter than the global header. */
int64_t omdp_pcap_walk(const uint8_t *buf, uint64_t size, int big_endian, int64_t *offs, int64_t *lens, int64_t *secs,
                       int64_t *fracs, uint64_t max, uint64_t *end);

/* The UDP payloads of a pcap's Ethernet frames, found while walking the chain (pcap_udp.c):
 * the walk and feedhandlers.captures.framing.parse_frames' checks in one pass, where the
 * numpy form took a replay decode task two thirds of its pcap reading. */
/* cdef: begin */
typedef struct omdp_pcap_udp {
    int64_t *pay_off;          /* the payload's offset in the buffer */
    uint32_t *pay_len;         /* its length (the UDP length less its 8-byte header) */
    int64_t *ts_ns;            /* seconds * 1e9 + fraction * frac_scale */
    uint32_t *dst_ip;          /* the IPv4 destination, host order */
    uint16_t *dst_port;        /* the UDP destination port */
    uint64_t max;              /* room in each of the five arrays */
    uint64_t n_udp;            /* out: the frames that are IPv4/UDP (written while below max) */
    uint64_t records;          /* out: whole records walked (n_udp of them UDP, the rest skipped) */
    uint64_t end;              /* out: where the chain stops, as omdp_pcap_walk's *end */
    uint64_t malformed;        /* out: of the records skipped, those cut short or with a bad header */
    uint64_t first_malformed;  /* out: the file offset of the first of them (its record header); 0: none */
} omdp_pcap_udp_t;
/* cdef: end */

/* Walks the records of the `size` bytes at `buf` as omdp_pcap_walk does and, for each
 * whole record whose captured frame is Ethernet (one 802.1Q tag or none), unfragmented
 * IPv4 with a header of at least 20 bytes, and UDP whose length fits the IP datagram,
 * which fits the captured bytes, writes its payload's place, time and destination (the
 * first `max`). Of the other records, those that are not IPv4/UDP (another ethertype or IP
 * protocol) are only skipped; those cut short inside their headers or datagram (a snaplen
 * smaller than the frame) or with a bad Ethernet/IPv4/UDP header, or fragments of a UDP
 * datagram, are counted in `malformed`. Every byte read is inside the record's captured bytes. Returns 0, or -1
 * for a NULL argument (arrays NULL with max > 0 included), a buffer shorter than the global
 * header, or frac_scale 0. */
int omdp_pcap_walk_udp(const uint8_t *buf, uint64_t size, int big_endian, uint32_t frac_scale, omdp_pcap_udp_t *out);

#endif /* OMDP_PCAP_WALK_H */
