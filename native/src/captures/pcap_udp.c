/* A pcap's UDP payloads in one walk of its record chain (pcap_walk.h): the record headers
 * and the Ethernet/IPv4/UDP checks of feedhandlers.captures.framing.parse_frames, every
 * read inside the record's captured bytes. */
#include "pcap_records.h"

#define ETH_LEN 14u
#define VLAN_LEN 4u
#define IP_LEN 20u
#define UDP_LEN 8u

static inline uint32_t be16(const uint8_t *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

#define NOT_UDP (-1)   /* another protocol: not the feed's, skipped */
#define MALFORMED (-2) /* cut short (snaplen) or a bad Ethernet/IPv4/UDP header: counted */

/* The UDP payload of the `len` captured bytes of frame f: 0 with *off (from f), *ulen, *dst,
 * *port set; NOT_UDP for a whole frame of another protocol (an ethertype other than IPv4,
 * an IPv4 protocol other than UDP); MALFORMED for a frame parse_frames refuses otherwise: cut
 * short inside its headers or its IPv4 datagram, an IPv4 header with a bad version, header
 * length or total length, a fragment of a UDP datagram, a UDP length that does not fit. */
static int udp_payload(const uint8_t *f, uint64_t len, uint64_t *off, uint32_t *plen, uint32_t *dst, uint16_t *port)
{
    if (len < ETH_LEN)
        return MALFORMED;
    uint32_t etype = be16(f + 12);
    uint64_t l3 = ETH_LEN;
    if (etype == 0x8100) {
        if (len < ETH_LEN + VLAN_LEN)
            return MALFORMED;
        l3 += VLAN_LEN;
        etype = be16(f + 16);
    }
    if (etype != 0x0800)
        return NOT_UDP;
    if (len < l3 + IP_LEN)
        return MALFORMED;
    const uint8_t *ip = f + l3;
    uint32_t ihl = (ip[0] & 0x0Fu) * 4u;
    if ((ip[0] >> 4) != 4 || ihl < IP_LEN)
        return MALFORMED;
    if (ip[9] != 17)
        return NOT_UDP;
    uint32_t total = be16(ip + 2), frag = be16(ip + 6);
    if ((frag & 0x3FFFu) || total < ihl + UDP_LEN || len < l3 + total)
        return MALFORMED;
    const uint8_t *udp = ip + ihl; /* udp + 8 <= ip + total <= f + len */
    uint32_t ulen = be16(udp + 4);
    if (ulen < UDP_LEN || ulen > total - ihl)
        return MALFORMED;
    *off = l3 + ihl + UDP_LEN;
    *plen = ulen - UDP_LEN;
    *dst = be16(ip + 16) << 16 | be16(ip + 18);
    *port = (uint16_t)be16(udp + 2);
    return 0;
}

int omdp_pcap_walk_udp(const uint8_t *buf, uint64_t size, int big_endian, uint32_t frac_scale, omdp_pcap_udp_t *out)
{
    if (!buf || !out || size < OMDP_PCAP_GLOBAL_HEADER_LEN || !frac_scale ||
        (out->max && (!out->pay_off || !out->pay_len || !out->ts_ns || !out->dst_ip || !out->dst_port)))
        return -1;
    uint64_t pos = OMDP_PCAP_GLOBAL_HEADER_LEN, records = 0, n = 0, malformed = 0, first_malformed = 0;
    pcap_record_t r;
    while (pcap_next_record(buf, size, big_endian, &pos, &r)) {
        records++;
        uint64_t off;
        uint32_t plen, dst;
        uint16_t port;
        int rc = udp_payload(buf + r.data, r.incl, &off, &plen, &dst, &port);
        if (rc == MALFORMED && malformed++ == 0)
            first_malformed = r.data - OMDP_PCAP_RECORD_HEADER_LEN;
        if (rc == 0) {
            if (n < out->max) {
                out->pay_off[n] = (int64_t)(r.data + off);
                out->pay_len[n] = plen;
                out->ts_ns[n] = (int64_t)pcap_field(r.hdr, big_endian) * 1000000000 +
                                (int64_t)pcap_field(r.hdr + 4, big_endian) * frac_scale;
                out->dst_ip[n] = dst;
                out->dst_port[n] = port;
            }
            n++;
        }
    }
    out->n_udp = n;
    out->records = records;
    out->malformed = malformed;
    out->first_malformed = first_malformed;
    out->end = pos;
    return 0;
}
