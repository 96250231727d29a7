/* OPRA binary output feed (OBI, block format version 6) codec: blocks <-> omdp_opra_msg_t
 * records (spec: opra-binary.md; docs/obi.md).
 *
 * One record layout for both of OPRA's formats: an OBI message decodes into the same
 * 256-byte record as a FAST V2 one (opra_msg.h), so feed handlers, engines, collectors and
 * the Spark jobs do not care which format a capture is in. The record's `wire` byte says
 * which format and wire form a record came from, so the encoder can write it back byte for
 * byte. The per-category field map is in docs/obi.md; in short:
 *
 *   every message  participant, category, msg_type, bbo_ind (header byte 3), msg_seq =
 *                  block_seq + index, time = the block time as Eastern HHMMSSmmm (FAST's
 *                  time field), retrans and session from the block header
 *   series         root = the symbol's bytes (5, space padded; a 'q' symbol gets a fifth
 *                  space), root_len 5, month_code/expiry_day/expiry_year, expiry, put_call,
 *                  strike_den, strike (the i32's bits), strike_px
 *   'q'            recorded as category 'k' with strike_den 'A' and premium_den 'B' filled
 *                  in (spec 7.5) and OMDP_OBI_WIRE_SHORT set
 *   'f'            net change as FAST has it: magnitude in net_change, sign in
 *                  net_change_ind ('+', '-', ' ' for 0); underlying i64 bits in
 *                  underlying_raw
 *   'Y'            symbol in root; index_den in underlying_den; type ' ': index_value
 *                  (sign extended) in underlying_raw; type 'I': bid_index/offer_index in
 *                  bid/offer with bid_px/offer_px
 *   'R'            mapped_line in volume (its fields bit stays clear)
 *   'C'            text in the side buffer at [var_off, var_off + var_len)
 *   txn_id, prn, and 'a' trade_id: when any is non-zero, an omdp_obi_extra_t in the side
 *                  buffer at var_off + var_len and OMDP_OBI_WIRE_EXTRA set
 *
 * Block header fields that are not per message (time to the nanosecond, feed indicator,
 * size, checksum) are reported per block in omdp_obi_block_t, which the encoder takes back.
 *
 * Prices: raw integers with their denominator code, and *_px = raw x 10^(9 - places) in
 * OMDP_PRICE_SCALE units, exact in int64 (no float anywhere); a code outside 'A'..'I' gives
 * OMDP_UNDEF_PRICE for that field and the message is kept (spec 8.2).
 *
 * Errors are negative codes, counted per code in omdp_obi_counters_t. No function reads
 * outside the buffers it is given, whatever their content.
 */
#ifndef OMDP_OPRA_OBI_H
#define OMDP_OPRA_OBI_H

#include <stddef.h>
#include <stdint.h>

#include "omdp/opra_msg.h"

/* ---- limits of the format ---------------------------------------------------------- */
#define OMDP_OBI_VERSION 6
#define OMDP_OBI_HEADER_SIZE 21
#define OMDP_OBI_MAX_BLOCK 1000       /* bytes, pad byte included */
#define OMDP_OBI_MAX_MESSAGES 255     /* msg_count is one byte */
#define OMDP_OBI_TEXT_MAX 200         /* 'C' text */
#define OMDP_OBI_MAX_MSG 214          /* the longest message: 'C' with 200 bytes of text */

/* ---- the record's `wire` byte ---------------------------------------------------------- */
#define OMDP_OBI_WIRE_OBI 0x01        /* decoded from (or to be encoded as) OBI; 0 = FAST V2 */
#define OMDP_OBI_WIRE_SHORT 0x02      /* a 'k' record that travels as a short quote 'q' */
#define OMDP_OBI_WIRE_EXTRA 0x04      /* an omdp_obi_extra_t sits at var_off + var_len */
#define OMDP_OBI_WIRE_FEED 0x08       /* its block's feed indicator was not 'O' (spec Q13) */

/* The header values the record has no field for, when any is non-zero (spec 5.1, 7.1, Q12). */
typedef struct omdp_obi_extra {
    uint32_t txn_id;          /* header bytes 4..7, carried without meaning */
    uint32_t prn;             /* header bytes 8..11, participant reference number */
    uint32_t trade_id;        /* 'a' bytes 35..38, "for future use" */
} omdp_obi_extra_t;

/* ---- the block header, read without decoding --------------------------------------- */

static inline uint32_t omdp_obi_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

/* Block sequence (first message's MSN) and message count of a block, both 0 when the
 * datagram is shorter than the header: what a feed handler arbitrates on, before (or
 * without) decoding. */
static inline void omdp_obi_header_peek(const uint8_t *blk, size_t len, uint64_t *block_seq, uint32_t *count)
{
    *block_seq = len >= OMDP_OBI_HEADER_SIZE ? omdp_obi_be32(blk + 6) : 0;
    *count = len >= OMDP_OBI_HEADER_SIZE ? blk[10] : 0;
}

/* ---- error codes ------------------------------------------------------------------- */
/* Block errors (decoding). counters.errors[-code] counts each. */
#define OMDP_OBI_E_TRUNCATED -1         /* datagram shorter than the 21-byte header */
#define OMDP_OBI_E_BAD_VERSION -2       /* byte 0 is not 6 (spec Q13: rejected, not guessed at) */
#define OMDP_OBI_E_BAD_SIZE -3          /* block_size below 21 or above 1000 */
#define OMDP_OBI_E_SIZE_PAST_DATAGRAM -4 /* block_size larger than the datagram */
#define OMDP_OBI_E_CHECKSUM -5          /* checksum mismatch (spec Q1): the block is dropped */
#define OMDP_OBI_E_UNKNOWN_CATEGORY -6  /* its length is unknown: the rest of the block is lost (Q9) */
#define OMDP_OBI_E_MSG_PAST_BLOCK -7    /* msg_count more than fits: a message runs past block_size */
#define OMDP_OBI_E_TRAILING_BYTES -8    /* after the last message: more than one byte, or a pad byte not 0 */
#define OMDP_OBI_E_TEXT_TOO_LONG -9     /* 'C' text length above 200 */
/* Encoder input errors. */
#define OMDP_OBI_E_MSG_COUNT -10        /* a block of more than 255 records */
#define OMDP_OBI_E_NOT_ALONE -11        /* a 'C' or 'H' record in a block with others */
#define OMDP_OBI_E_CATEGORY -12         /* a record whose category OBI lacks ('?', ...) */
#define OMDP_OBI_E_SHORT_RANGE -13      /* a short-quote record whose values do not fit 'q' */
#define OMDP_OBI_E_VALUE_RANGE -14      /* a value that does not fit its wire field */
#define OMDP_OBI_E_VAR_OUTSIDE -15      /* var_off/var_len (and extras) outside the side buffer */
#define OMDP_OBI_E_BLOCK_TOO_BIG -16    /* the block would be longer than 1000 bytes */
/* Caller buffers. Not a block error: nothing is counted. */
#define OMDP_OBI_E_CAPACITY -17
#define OMDP_OBI_ERROR_CODES 18         /* size of counters.errors; index 0 unused */

/* ---- decode options ---------------------------------------------------------------- */
/* Keep the records of a block whose checksum does not match (a capture viewer must still
 * show it, spec Q1); the block's status still says so. Default: the block is an error. */
#define OMDP_OBI_KEEP_BAD_CHECKSUM 0x1

/* block status bits */
#define OMDP_OBI_BLK_CHECKSUM_BAD 0x01  /* stored checksum != computed */
#define OMDP_OBI_BLK_FEED_FLAGGED 0x02  /* feed indicator not 'O' (decoded, flagged: Q13) */
#define OMDP_OBI_BLK_PAD 0x04           /* ends in a pad byte */
#define OMDP_OBI_BLK_EMPTY 0x08         /* msg_count 0 (Q8: accepted, counted) */

/* One block's header as received, and what decoding it gave. The encoder reads block_seq,
 * ts_sec, ts_nsec, feed, retrans and session back from it (32 bytes). */
typedef struct omdp_obi_block {
    uint32_t block_seq;       /* MSN of the block's first message */
    uint32_t ts_sec;          /* block time, UTC seconds */
    uint32_t ts_nsec;         /* ... and nanoseconds */
    uint32_t first;           /* index of its first record in the output */
    uint16_t size;            /* block_size as sent */
    uint16_t checksum;        /* as sent */
    uint16_t checksum_calc;   /* as computed (spec 4.2) */
    uint8_t msg_count;        /* as sent */
    uint8_t count;            /* records decoded (0 for a bad block) */
    uint8_t feed;             /* data feed indicator, 'O' */
    uint8_t retrans;          /* ' ' original, 'V' retransmitted */
    uint8_t session;          /* 0x00 regular; GTH 0x01..0x05 or 'X' */
    uint8_t status;           /* OMDP_OBI_BLK_* */
    int32_t error;            /* 0 or OMDP_OBI_E_* */
} omdp_obi_block_t;

/* Where a block error was found. */
typedef struct omdp_obi_error {
    uint64_t packet_index;    /* caller's numbering (batch: first_packet_index + i) */
    int32_t code;             /* OMDP_OBI_E_* */
    uint32_t offset;          /* byte offset in the block */
    int32_t message_index;    /* -1: the block header */
    int32_t category;         /* the message's category byte, -1 for the header */
} omdp_obi_error_t;

/* Cumulative counters, owned by the caller; the decoders add to them. */
typedef struct omdp_obi_counters {
    uint64_t packets;         /* blocks looked at */
    uint64_t packets_ok;
    uint64_t packets_bad;     /* dropped for an error */
    uint64_t messages;        /* records produced from good blocks */
    uint64_t empty;           /* good blocks with msg_count 0 (Q8) */
    uint64_t feed_flagged;    /* good blocks whose feed indicator was not 'O' (Q13) */
    uint64_t checksum_kept;   /* bad-checksum blocks kept under OMDP_OBI_KEEP_BAD_CHECKSUM */
    uint64_t errors[OMDP_OBI_ERROR_CODES]; /* errors[-code] */
} omdp_obi_counters_t;

/* What one decode_batch call did. */
typedef struct omdp_obi_batch_result {
    uint64_t packets_done;    /* blocks consumed, good or bad, from the start */
    uint64_t messages;        /* records written to out */
    uint64_t side_used;       /* bytes of side written */
    uint64_t errors;          /* block errors seen (errs holds the first err_cap) */
} omdp_obi_batch_result_t;

/* Decode one block (the UDP payload, len bytes) into out[0 .. msg_count). *blk gets the
 * header and status (may be NULL). Side parts go to side from *side_used on, which is
 * advanced. Returns the record count, or a negative code with *err filled (may be NULL);
 * on an error the records before err->message_index are valid, the rest garbage.
 * OMDP_OBI_E_CAPACITY: out_cap below msg_count or side too small. `counters` (may be NULL)
 * counts the block. */
int omdp_obi_decode_block(const uint8_t *blk, size_t len, uint64_t packet_index, uint32_t options,
                          omdp_opra_msg_t *out, uint32_t out_cap,
                          uint8_t *side, uint32_t side_cap, uint32_t *side_used,
                          omdp_obi_block_t *info, omdp_obi_error_t *err, omdp_obi_counters_t *counters);

/* Decode blocks i = 0 .. npkts-1, block i being buf[offsets[i] .. offsets[i]+lengths[i]).
 * Records go to out back to back; blocks[i] (may be NULL) describes block i, its first
 * and count giving its records (count 0 for a bad block, which is skipped and counted; the
 * first err_cap errors are stored in errs). Stops early with OMDP_OBI_E_CAPACITY when out
 * or side cannot take the next block (res->packets_done tells where to resume); returns 0
 * when every block was consumed. */
int omdp_obi_decode_batch(const uint8_t *buf, const uint64_t *offsets, const uint32_t *lengths,
                          uint64_t npkts, uint64_t first_packet_index, uint32_t options,
                          omdp_opra_msg_t *out, uint64_t out_cap,
                          uint8_t *side, uint64_t side_cap, omdp_obi_block_t *blocks,
                          omdp_obi_error_t *errs, uint32_t err_cap,
                          omdp_obi_counters_t *counters, omdp_obi_batch_result_t *res);

/* Encode n records (0..255; 0 is an empty block, spec Q8) as one block with the header values of *hdr (block_seq,
 * ts_sec, ts_nsec, feed, retrans, session), the pad byte and the checksum. Returns the
 * block length or a negative code with *err naming the record (message_index). */
int64_t omdp_obi_encode_block(const omdp_obi_block_t *hdr, const omdp_opra_msg_t *msgs, uint32_t n,
                              const uint8_t *side, uint64_t side_len,
                              uint8_t *out, uint64_t cap, omdp_obi_error_t *err);

/* What one encode_stream call did. */
typedef struct omdp_obi_stream_result {
    uint64_t messages_done;   /* records encoded (all unless out or max_blocks ran out) */
    uint64_t bytes_used;      /* bytes of out written */
} omdp_obi_stream_result_t;

/* Encode a run of records as consecutive blocks, as OPRA packs a line: block k takes up to
 * wanted_counts[k % n_wanted] records (clamped to 1..255) and closes early when the next
 * record would make it longer than max_block_bytes (<= 1000, pad byte included), when the
 * next record's session or retransmission byte differs or its msg_seq does not follow on, and around 'C' and 'H' records,
 * which travel alone. Block k's header: block_seq = its first record's msg_seq (low 32
 * bits), time = ts_ns[its last record] (UTC ns; 0 when ts_ns is NULL: OPRA stamps a block
 * when it finished it), feed 'O'. Block k is out[blk_off[k] .. blk_off[k]+blk_len[k]) and
 * starts with record blk_first[k]. Returns the blocks written (stops early when out or
 * max_blocks is full; res says how far), or a record's error (err->message_index: its
 * index in msgs). */
int64_t omdp_obi_encode_stream(const omdp_opra_msg_t *msgs, uint64_t n, const int64_t *ts_ns,
                               const uint8_t *side, uint64_t side_len,
                               const uint32_t *wanted_counts, uint64_t n_wanted, uint32_t max_block_bytes,
                               uint8_t *out, uint64_t out_cap,
                               uint64_t *blk_off, uint32_t *blk_len, uint64_t *blk_first, uint64_t max_blocks,
                               omdp_obi_stream_result_t *res, omdp_obi_error_t *err);

/* The wire length of one record as an OBI message, or a negative code. */
int omdp_obi_message_length(const omdp_opra_msg_t *msg);

/* The spec's checksum (4.2) of a block of len bytes: the low 16 bits of the sum of every
 * byte but offsets 19 and 20. */
uint16_t omdp_obi_checksum(const uint8_t *blk, size_t len);

/* Eastern HHMMSS (US daylight saving rules since 2007) of UTC seconds: what the record's
 * time field holds, x 1000 plus the milliseconds. */
uint32_t omdp_obi_eastern_hhmmss(uint32_t utc_sec);

/* Short constant name of a code ("TRUNCATED", ...), "UNKNOWN" for others. */
const char *omdp_obi_error_name(int code);

#endif /* OMDP_OPRA_OBI_H */
