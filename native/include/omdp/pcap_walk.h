/* Following a classic pcap file's record chain (feedhandlers/captures/pcap.py): each
 * 16-byte record header (seconds, fraction, captured length, original length) gives the
 * next record's offset, so the walk is one dependent load per packet - cheap in C, the
 * largest part of reading a capture when done one record at a time in Python. */
#ifndef OMDP_PCAP_WALK_H
#define OMDP_PCAP_WALK_H

#include <stdint.h>

#define OMDP_PCAP_GLOBAL_HEADER_LEN 24u
#define OMDP_PCAP_RECORD_HEADER_LEN 16u

/* Walk the records of buf[0 .. size) from OMDP_PCAP_GLOBAL_HEADER_LEN, the header fields
 * in big-endian order when big_endian != 0, little-endian otherwise. For each complete
 * record i (header and its captured bytes inside buf) while i < cap: data_off[i] (the
 * offset of its captured bytes), incl_len[i], ts_sec[i], ts_frac[i]. With data_off NULL
 * (the other arrays then unused, cap ignored) it only counts. It stops at the end of buf,
 * at a record whose captured bytes run past it, at a header cut short, or after cap
 * records; *stop is the offset where it stopped (size when every byte was walked).
 * Returns the records walked, or -1 on a bad argument (NULL buf or stop, size shorter
 * than the global header). */
int64_t omdp_pcap_walk(const uint8_t *buf, uint64_t size, int big_endian, int64_t *data_off, int64_t *incl_len,
                       int64_t *ts_sec, int64_t *ts_frac, uint64_t cap, uint64_t *stop);

#endif /* OMDP_PCAP_WALK_H */
