/* OPRA packets -> the tick table's columns, in Arrow's layout (opra_arrow.c).
 *
 * The Spark feeds job's decode path, for either of OPRA's formats: FAST V2 packets
 * (omdp_opra_decode_arrow) or OBI v6 blocks (omdp_obi_decode_arrow) are decoded by the
 * format's own decoder (omdp_opra_decode_packet, omdp_obi_decode_block: the same code as
 * every other decoder) into the one OPRA message record, and each message becomes one row written straight into
 * caller-owned column buffers, one contiguous array per column, so that Python can wrap them
 * as pyarrow arrays without a copy and without a numpy pass per field.
 *
 * Layouts (Arrow columnar format): fixed-width columns are plain little-endian arrays of
 * rows; a nullable column has a validity bitmap (bit r of byte r/8, LSB first; 1 = valid)
 * of at least (row_cap + 7) / 8 bytes; a string column is int32 offsets (row_cap + 1 of them,
 * offsets[0] = 0) plus UTF-8 data. Rows are written from row 0 on every call, in packet order;
 * with rest_row set, quotes from row 0 and the other messages from rest_row (below).
 *
 * Columns (ops/spark/feeds/tick_table.py TICK_FIELDS, same order and meaning):
 *   ts_ns            int64   the packet's capture time (caller's pkt_ts_ns[i])
 *   block_seq, msg_seq int64
 *   msg_index, packet_messages, packet_bytes int32
 *   category, msg_type, participant, put_call  one-character strings, null for code 0
 *                    (a code >= 0x80 is written as its two-byte UTF-8 form, U+0080..U+00FF);
 *                    their validity bitmaps always, the strings and/or the codes (chr_code)
 *                    where the caller passes buffers for them
 *   root             string, never null: slot 6 less trailing NULs and spaces; a byte >= 0x80
 *                    becomes U+FFFD (as Python's decode("ascii", "replace"))
 *   expiry           int32, null when 0
 *   strike_px, bid_px, offer_px, premium_px  int64, null when the slot is absent or the
 *                    price is OMDP_UNDEF_PRICE
 *   bid_size, offer_size, volume, open_interest  int64, null when the slot is absent
 *   time             int32, null when the slot is absent
 * ``underlying`` (root -> underlying from the day's manifest) is not the decoder's business:
 * root_id[r] (an index into the call's distinct roots, root_first_row[k] naming the first row
 * of root k) lets the caller build it once per distinct root.
 */
#ifndef OMDP_OPRA_ARROW_H
#define OMDP_OPRA_ARROW_H

#include <stdint.h>

#include "omdp/opra_fast.h"
#include "omdp/opra_obi.h"

/* cdef: begin */
#define OMDP_ARROW_CHAR_COLS 4      /* category, msg_type, participant, put_call */
#define OMDP_ARROW_CHAR_BYTES 2     /* data bytes per row a char column may need */
#define OMDP_ARROW_ROOT_BYTES 18    /* data bytes per row the root column may need (6 x 3) */
#define OMDP_ARROW_PRICE_COLS 4     /* strike_px, bid_px, offer_px, premium_px */
#define OMDP_ARROW_QTY_COLS 4       /* bid_size, offer_size, volume, open_interest */

/* Caller-owned column buffers, each sized for row_cap rows (see the header comment). */
typedef struct omdp_opra_arrow_cols {
    uint64_t row_cap;
    int64_t *ts_ns;
    int64_t *block_seq;
    int64_t *msg_seq;
    int32_t *msg_index;
    int32_t *packet_messages;
    int32_t *packet_bytes;
    int32_t *chr_off[OMDP_ARROW_CHAR_COLS];     /* row_cap + 1 each; with chr_data */
    uint8_t *chr_data[OMDP_ARROW_CHAR_COLS];    /* row_cap * OMDP_ARROW_CHAR_BYTES each; NULL: the
                                                   strings are not written (chr_code is) */
    uint8_t *chr_valid[OMDP_ARROW_CHAR_COLS];
    int32_t *root_off;                          /* row_cap + 1 (see roots_only) */
    uint8_t *root_data;                         /* row_cap * OMDP_ARROW_ROOT_BYTES */
    int32_t *root_id;                           /* row_cap: index of the row's distinct root */
    uint32_t *root_first_row;                   /* row_cap: first row of each distinct root */
    int32_t *expiry;
    uint8_t *expiry_valid;
    int64_t *price[OMDP_ARROW_PRICE_COLS];
    uint8_t *price_valid[OMDP_ARROW_PRICE_COLS];
    int64_t *qty[OMDP_ARROW_QTY_COLS];
    uint8_t *qty_valid[OMDP_ARROW_QTY_COLS];
    int32_t *time;
    uint8_t *time_valid;
    int32_t *chr_code[OMDP_ARROW_CHAR_COLS];    /* optional (NULL: not written): row_cap each, the
                                                   character code per row (0: null), the index of a
                                                   dictionary of the 256 one-character strings */
    int32_t roots_only;                         /* nonzero: root_off/root_data hold one string per
                                                   distinct root, in root id order (res->roots + 1
                                                   offsets), not one per row: with root_id, the
                                                   root column as a dictionary */
    uint64_t rest_row;                          /* 0: every row in packet order from row 0. Else
                                                   quotes (category 'k') go to rows 0, 1, ... and
                                                   every other message to rows rest_row,
                                                   rest_row + 1, ..., each in packet order: a
                                                   quote carries every option field and no sale
                                                   field, so each region's columns are (almost)
                                                   free of nulls, which Parquet writes several
                                                   times faster. Needs roots_only and no chr_data
                                                   (per-row strings cannot have two regions) */
    int32_t *packet_rows;                       /* optional (NULL: not written): npkts entries
                                                   (not row_cap), the rows packet i wrote: its
                                                   message count, 0 for a malformed packet;
                                                   entries from res->packets_done on untouched */
    uint32_t *root_rows;                        /* optional (NULL: not counted): row_cap entries,
                                                   the rows of each distinct root (root id order,
                                                   res->roots of them) in the first region: every
                                                   row without rest_row, the quotes with it. With
                                                   packet_rows, what a profile of the feed needs
                                                   without a pass over the rows */
    int64_t *packet_seq;                        /* optional (NULL: not written): npkts entries,
                                                   the msg_seq of packet i's first message, -1
                                                   for a malformed or empty packet (a packet of
                                                   n rows holds msg_seq .. msg_seq + n - 1: what
                                                   gaps are counted from); entries from
                                                   res->packets_done on untouched */
} omdp_opra_arrow_cols_t;

/* What one decode_arrow call did. */
typedef struct omdp_opra_arrow_result {
    uint64_t packets_done;  /* packets consumed, good or bad, from the start */
    uint64_t rows;          /* rows written */
    uint64_t rest_rows;     /* of them, rows from rest_row on (0 without rest_row) */
    uint64_t roots;         /* distinct roots among them (root_first_row[0 .. roots)) */
    uint64_t errors;        /* packet errors seen (errs holds the first err_cap of them) */
} omdp_opra_arrow_result_t;
/* cdef: end */

/* The rows omdp_opra_decode_arrow can write for these packets at most: the sum of the
 * message counts their headers claim (bytes 12..14, three ASCII digits; a good packet holds
 * exactly that many messages). A packet shorter than its 15-byte header, outside buf_len or
 * whose count is not three digits adds 0 (it cannot decode). 0 for NULL arguments. */
uint64_t omdp_opra_arrow_row_bound(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                   const uint32_t *lengths, uint64_t npkts);

/* Decode packets i = 0 .. npkts-1 (packet i is buf[offsets[i] .. offsets[i]+lengths[i]),
 * captured at pkt_ts_ns[i]) into cols, one row per message of every good packet, in packet
 * order. A malformed packet writes no row: its error is stored in errs (the first err_cap)
 * and counted in *counters (may be NULL; same counters as omdp_opra_decode_batch), and the
 * next packet decodes normally. Returns 0 when every packet was consumed, or
 * OMDP_OPRA_E_CAPACITY when the next good packet's rows do not fit in row_cap
 * (res->packets_done tells where to resume; the rows written so far are complete; with
 * rest_row: when either region's next rows do not fit), or when scratch memory cannot be
 * had or rest_row is set without roots_only, with chr_data or past row_cap (then no row of
 * the call is to be used). */
int omdp_opra_decode_arrow(const uint8_t *buf, const uint64_t *offsets, const uint32_t *lengths,
                           const int64_t *pkt_ts_ns, uint64_t npkts, uint64_t first_packet_index,
                           const omdp_opra_arrow_cols_t *cols,
                           omdp_opra_error_t *errs, uint32_t err_cap,
                           omdp_opra_counters_t *counters, omdp_opra_arrow_result_t *res);

/* The same for OBI v6 blocks: the sum of the msg_count bytes (byte 10) of the blocks of at
 * least a header's 21 bytes inside buf_len (a good block holds exactly that many). */
uint64_t omdp_obi_arrow_row_bound(const uint8_t *buf, uint64_t buf_len, const uint64_t *offsets,
                                  const uint32_t *lengths, uint64_t npkts);

/* omdp_opra_decode_arrow for OBI v6 blocks, into the same columns: block i's messages
 * (omdp_obi_decode_block, the live path's options: a block whose checksum does not match is
 * an error, spec Q1) become rows as a FAST V2 packet's do; a bad block writes no row, its
 * error goes to errs and its count to *counters (omdp_obi_decode_batch's counters, empty and
 * feed-flagged blocks included). Returns 0, or OMDP_OPRA_E_CAPACITY as above. */
int omdp_obi_decode_arrow(const uint8_t *buf, const uint64_t *offsets, const uint32_t *lengths,
                          const int64_t *pkt_ts_ns, uint64_t npkts, uint64_t first_packet_index,
                          const omdp_opra_arrow_cols_t *cols,
                          omdp_obi_error_t *errs, uint32_t err_cap,
                          omdp_obi_counters_t *counters, omdp_opra_arrow_result_t *res);

#endif /* OMDP_OPRA_ARROW_H */
