/* OPRA FAST V2 codec: packets <-> omdp_opra_msg_t records (spec: opra-fast-v2.md).
 *
 * Decoding fills one 256-byte record per message (opra_msg.h) and puts the variable parts
 * ('C'/'H' text, default messages, 'Y' entries) in a caller-owned side buffer. The batch
 * entry point decodes many packets in one call: the path feed handlers and Spark use.
 * Encoding follows the spec's encoder rules, so encode(decode(p)) == p for every packet
 * SIAC's encoder makes; the stream encoder cuts a run of records into packets for the
 * synthetic generator.
 *
 * Errors are negative codes. A packet error names the packet, the byte offset in it, the
 * message and the slot; in a batch the packet is skipped (its records are not kept),
 * counted per code, and the next packet decodes normally. No function reads outside the
 * buffers it is given, whatever their content.
 */
#ifndef OMDP_OPRA_FAST_H
#define OMDP_OPRA_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/opra_msg.h"

/* ---- limits of the format ---------------------------------------------------------- */
/* cdef: begin */
#define OMDP_OPRA_HEADER_SIZE 15     /* SOH, version, block sequence(10), count(3) */
#define OMDP_OPRA_MAX_MESSAGES 999   /* three count digits */
#define OMDP_OPRA_MAX_PACKET 1456    /* one Ethernet MTU of UDP payload */
#define OMDP_OPRA_TEXT_MAX 450       /* slots 48 and 49 */
#define OMDP_OPRA_Y_MAX 99           /* slots 39/40: two digits */
#define OMDP_OPRA_SLOTS 50
/* cdef: end */
#define OMDP_OPRA_VERSION 2

/* ---- the packet header, read without decoding -------------------------------------- */

/* The value of n ASCII digits; 0 when any byte is not a digit (the spec lets the block
 * sequence hold anything, and nothing may reject a packet for it). */
static inline uint64_t omdp_opra_header_digits(const uint8_t *p, int n)
{
    uint64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return 0;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    return v;
}

/* Block sequence and message count of a packet's header, each 0 when not all digits, both 0
 * when the packet is shorter than the header: what a feed handler arbitrates on and a
 * replayer publishes, before (or without) decoding. */
static inline void omdp_opra_header_peek(const uint8_t *pkt, size_t len, uint64_t *block_seq, uint32_t *count)
{
    *block_seq = len >= OMDP_OPRA_HEADER_SIZE ? omdp_opra_header_digits(pkt + 2, 10) : 0;
    *count = len >= OMDP_OPRA_HEADER_SIZE ? (uint32_t)omdp_opra_header_digits(pkt + 12, 3) : 0;
}
/* Normalized price of a field whose denominator code is not 'A'..'I'. */
/* cdef: begin */
#define OMDP_UNDEF_PRICE INT64_MAX
/* cdef: end */

/* ---- error codes ------------------------------------------------------------------- */
/* Packet errors (decoding). counters.errors[-code] counts each. */
#define OMDP_OPRA_E_TRUNCATED -1        /* shorter than the header and ETX */
#define OMDP_OPRA_E_BAD_SOH -2          /* byte 0 is not 0x01 */
#define OMDP_OPRA_E_BAD_VERSION -3      /* byte 1 is not 0x02 */
#define OMDP_OPRA_E_BAD_ETX -4          /* last byte is not 0x03 */
#define OMDP_OPRA_E_BAD_COUNT -5        /* count is not three ASCII digits */
#define OMDP_OPRA_E_COUNT_MISMATCH -6   /* messages decoded != header count */
#define OMDP_OPRA_E_OVERLONG_INT -7     /* no stop bit within 5 bytes */
#define OMDP_OPRA_E_NO_DICT_VALUE -8    /* absent integer, its dictionary entry never set */
#define OMDP_OPRA_E_NO_PREVIOUS -9      /* INCREMENT (slot 4) absent with no previous value */
#define OMDP_OPRA_E_PMAP_TOO_LONG -10   /* no stop bit within 8 pmap bytes */
#define OMDP_OPRA_E_MSG_PAST_PACKET -11 /* a message length runs past the packet's ETX */
#define OMDP_OPRA_E_FIELD_PAST_MSG -12  /* a field runs past the end of its message */
#define OMDP_OPRA_E_STRING_TOO_LONG -13 /* a string longer than its record field */
#define OMDP_OPRA_E_VALUE_RANGE -14     /* a number that does not fit its record field */
#define OMDP_OPRA_E_UNUSED_SLOT -15     /* pmap bit of a slot the message's layout lacks */
#define OMDP_OPRA_E_TRAILING_BYTES -16  /* message bytes left after its last field */
#define OMDP_OPRA_E_UNKNOWN_CATEGORY -17 /* slot 0 not one of a k d f Y C H ? */
#define OMDP_OPRA_E_Y_TYPE -18          /* 'Y' type (slot 1) not ' ' 'I' 'F' 'C' */
/* Encoder input errors. */
#define OMDP_OPRA_E_EMPTY_STRING -19    /* a string differing from the dictionary is empty */
#define OMDP_OPRA_E_BAD_STRING_BYTE -20 /* a string byte >= 0x80 cannot be sent */
#define OMDP_OPRA_E_LONG_NOT_LAST -21   /* a message >= 255 bytes that is not last */
#define OMDP_OPRA_E_MSG_COUNT -22       /* a packet of 0 or more than 999 messages */
#define OMDP_OPRA_E_VAR_OUTSIDE -23     /* var_off/var_len outside the side buffer */
#define OMDP_OPRA_E_MSG_TOO_BIG -24     /* one message alone exceeds max_packet_bytes */
/* Caller buffers. Not a packet error: nothing is counted. */
/* cdef: begin */
#define OMDP_OPRA_E_CAPACITY -25
/* Both ways: a packet longer than OMDP_OPRA_MAX_PACKET (decode: a packet error, counted;
 * encode: the records would make one, or encode_stream's max_packet_bytes is above it). */
#define OMDP_OPRA_E_PACKET_TOO_BIG -26
#define OMDP_OPRA_ERROR_CODES 27        /* size of counters.errors; index 0 unused */

/* The context of an error: which packet, where in it, which message and slot. */
typedef struct omdp_opra_error {
    uint64_t packet_index;  /* caller's numbering (batch: first_packet_index + i) */
    int32_t code;           /* OMDP_OPRA_E_* */
    uint32_t offset;        /* byte offset in the packet where it was found */
    int32_t message_index;  /* -1: the packet header */
    int32_t slot;           /* -1: no particular field */
} omdp_opra_error_t;

/* Cumulative counters, owned by the caller; decode_batch adds to them. */
typedef struct omdp_opra_counters {
    uint64_t packets;       /* packets looked at */
    uint64_t packets_ok;
    uint64_t packets_bad;   /* skipped for an error */
    uint64_t messages;      /* records produced from good packets */
    uint64_t errors[OMDP_OPRA_ERROR_CODES]; /* errors[-code] */
} omdp_opra_counters_t;

/* What one decode_batch call did. */
typedef struct omdp_opra_batch_result {
    uint64_t packets_done;  /* packets consumed, good or bad, from the start */
    uint64_t messages;      /* records written to out */
    uint64_t side_used;     /* bytes of side written */
    uint64_t errors;        /* packet errors seen (errs holds the first err_cap of them) */
} omdp_opra_batch_result_t;

/* What one encode_stream call did. */
typedef struct omdp_opra_stream_result {
    uint64_t messages_done; /* records encoded (all of them unless out/max_pkts ran out) */
    uint64_t bytes_used;    /* bytes of out written */
} omdp_opra_stream_result_t;
/* cdef: end */

/* Decode one packet into out[0 .. count). A packet longer than OMDP_OPRA_MAX_PACKET is
 * OMDP_OPRA_E_PACKET_TOO_BIG (in a batch: skipped and counted, like every packet error). Variable parts go to side starting at
 * *side_used (var_off is relative to side), and *side_used is advanced. Returns the
 * message count, or a negative code with *err filled (err may be NULL). Records of the
 * packet are then partial garbage and must be ignored. OMDP_OPRA_E_CAPACITY: out_cap below
 * the header count, or side too small. */
int omdp_opra_decode_packet(const uint8_t *pkt, size_t len, uint64_t packet_index,
                            omdp_opra_msg_t *out, uint32_t out_cap,
                            uint8_t *side, uint32_t side_cap, uint32_t *side_used,
                            omdp_opra_error_t *err);

/* Decode packets i = 0 .. npkts-1, packet i being buf[offsets[i] .. offsets[i]+lengths[i]).
 * Records go to out back to back; pkt_first[i]/pkt_count[i] give packet i's records (count
 * 0 for a bad packet). Bad packets are skipped: the first err_cap errors are stored in errs,
 * every one is counted in *counters (may be NULL). Stops early, returning
 * OMDP_OPRA_E_CAPACITY, when out or side cannot take the next packet (res->packets_done
 * tells where to resume); returns 0 when every packet was consumed. */
int omdp_opra_decode_batch(const uint8_t *buf, const uint64_t *offsets, const uint32_t *lengths,
                           uint64_t npkts, uint64_t first_packet_index,
                           omdp_opra_msg_t *out, uint64_t out_cap,
                           uint8_t *side, uint64_t side_cap,
                           uint32_t *pkt_first, uint32_t *pkt_count,
                           omdp_opra_error_t *errs, uint32_t err_cap,
                           omdp_opra_counters_t *counters, omdp_opra_batch_result_t *res);

/* Encode n records (1..999) as one packet into out. Strings and 'Y' entries are read from
 * side at each record's var_off/var_len. Returns the packet length or a negative code with
 * *err naming the record (message_index) and slot; OMDP_OPRA_E_PACKET_TOO_BIG when the
 * packet would be longer than OMDP_OPRA_MAX_PACKET (err names the record that overflows). */
int64_t omdp_opra_encode_packet(const omdp_opra_msg_t *msgs, uint32_t n,
                                const uint8_t *side, uint64_t side_len,
                                uint8_t *out, uint64_t cap, omdp_opra_error_t *err);

/* Encode a run of records as consecutive packets. Packet k takes up to
 * wanted_counts[k % n_wanted] records (clamped to 1..999) and closes early when the next
 * record would make it longer than max_packet_bytes, when a record of 255 bytes or more
 * was written (it must be last), or when the next record cannot follow in the same packet
 * (an empty string after a set one: an 'H' without text after text). Packet k is
 * out[pkt_off[k] .. pkt_off[k]+pkt_len[k]) and starts with record pkt_first_msg[k].
 * Returns the packets written; stops early when out or max_pkts is full (res tells how
 * many records were encoded). A record that cannot be encoded at all returns its error. */
int64_t omdp_opra_encode_stream(const omdp_opra_msg_t *msgs, uint64_t n,
                                const uint8_t *side, uint64_t side_len,
                                const uint32_t *wanted_counts, uint64_t n_wanted,
                                uint32_t max_packet_bytes,
                                uint8_t *out, uint64_t out_cap,
                                uint64_t *pkt_off, uint32_t *pkt_len, uint64_t *pkt_first_msg,
                                uint64_t max_pkts,
                                omdp_opra_stream_result_t *res, omdp_opra_error_t *err);

/* Render one record as SIAC's reference decoder prints it (spec section 7), without a
 * newline or NUL. Returns its length, OMDP_OPRA_E_CAPACITY, or OMDP_OPRA_E_VAR_OUTSIDE. */
int64_t omdp_opra_render_ascii(const omdp_opra_msg_t *msg, const uint8_t *side, uint64_t side_len,
                               char *out, uint64_t cap);

/* cdef: begin */
#define OMDP_OPRA_RENDER_ASCII 0     /* spec section 7 */
#define OMDP_OPRA_RENDER_TABLE 1     /* readable columns (omdp decode without --ascii) */
/* cdef: end */
/* A line per record, each ended by '\n'; line_end[i] (may be NULL) is the offset after
 * record i's newline. Returns the bytes written or a negative code. */
int64_t omdp_opra_render_batch(const omdp_opra_msg_t *msgs, uint64_t n,
                               const uint8_t *side, uint64_t side_len, int style,
                               char *out, uint64_t cap, uint64_t *line_end);

/* Turn the quote fast path on (default) or off for every decoder in the process; returns the
 * previous setting. Both paths give identical results; tests and benchmarks compare them. */
int omdp_opra_set_fast_path(int enabled);

/* Short constant name of a code ("TRUNCATED", ...), "UNKNOWN" for others. */
const char *omdp_opra_error_name(int code);

#endif /* OMDP_OPRA_FAST_H */
