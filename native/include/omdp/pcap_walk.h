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

#endif /* OMDP_PCAP_WALK_H */
