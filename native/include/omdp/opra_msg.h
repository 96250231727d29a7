/* The OPRA message record: one decoded OPRA message, 256 bytes, the same for both of OPRA's
 * formats (FAST V2 here, the binary OBI feed as opra_obi.h maps it; `wire` tells them apart).
 *
 * Owned by feedhandlers (Python reads it as feedhandlers.opra_record.OPRA_MSG_DTYPE, built
 * from this struct). It starts with the omdp record header, holds every field
 * of the wire format as decoded (raw values and character codes, so the encoder can
 * write the packet back byte for byte) and the normalized values a consumer needs
 * (expiry date, put/call, prices as int64 with OMDP_PRICE_SCALE units).
 *
 * Variable parts - 'C'/'H' text, a default message's ASCII, the entries of a 'Y' group -
 * live in the packet's side buffer at [var_off, var_off + var_len): text and default
 * messages as raw bytes; a 'Y' group as y_count entries of omdp_opra_y_entry_t.
 *
 * `fields` has bit k set when slot k (spec section 4) holds a value for this message -
 * the slots its category uses, whether sent or copied from the dictionary.
 */
#ifndef OMDP_OPRA_MSG_H
#define OMDP_OPRA_MSG_H

#include <stdint.h>
#include "omdp/record.h"

/* cdef: begin */
#define OMDP_PRICE_SCALE 1000000000LL   /* int64 prices: 1e-9 units, as DBN */
#define OMDP_NO_UNDERLYING 0xFFFFFFFFu  /* underlying_id before routing */
#define OMDP_OPRA_MSG_SIZE 256
/* cdef: end */
#define OMDP_OPRA_ROOT_MAX 6

/* cdef: begin */
typedef struct omdp_opra_msg {
    omdp_record_header_t hdr;  /*   0 type OMDP_RT_OPRA_MSG, length 256 */
    uint64_t block_seq;        /*  56 the packet's block sequence (0 if not all digits) */
    uint64_t msg_seq;          /*  64 slot 4, message sequence number */
    uint64_t fields;           /*  72 bit k: slot k holds a value in this message */
    uint64_t underlying_raw;   /*  80 slot 24, underlying stock price (11 digits) */
    int64_t strike_px;         /*  88 normalized strike (slots 10, 11) */
    int64_t bid_px;            /*  96 normalized bid (slots 15, 25) */
    int64_t offer_px;          /* 104 normalized offer (slots 15, 27) */
    int64_t premium_px;        /* 112 normalized last sale premium (slots 15, 16) */
    int64_t best_bid_px;       /* 120 normalized best bid appendage (slots 32, 33) */
    int64_t best_offer_px;     /* 128 normalized best offer appendage (slots 36, 37) */
    uint32_t time;             /* 136 slot 5, HHMMSSmmm */
    uint32_t expiry;           /* 140 YYYYMMDD from slots 7, 8, 9 (0 if not derivable) */
    uint32_t underlying_id;    /* 144 set by routing; OMDP_NO_UNDERLYING before */
    uint32_t strike;           /* 148 slot 11 */
    uint32_t volume;           /* 152 slot 13 */
    uint32_t open_interest;    /* 156 slot 14 */
    uint32_t premium;          /* 160 slot 16 */
    uint32_t open;             /* 164 slot 17 */
    uint32_t high;             /* 168 slot 18 */
    uint32_t low;              /* 172 slot 19 */
    uint32_t last;             /* 176 slot 20 */
    uint32_t net_change;       /* 180 slot 22 */
    uint32_t bid;              /* 184 slot 25 */
    uint32_t bid_size;         /* 188 slot 26 */
    uint32_t offer;            /* 192 slot 27 */
    uint32_t offer_size;       /* 196 slot 28 */
    uint32_t best_bid;         /* 200 slot 33 */
    uint32_t best_bid_size;    /* 204 slot 34 */
    uint32_t best_offer;       /* 208 slot 37 */
    uint32_t best_offer_size;  /* 212 slot 38 */
    uint32_t var_off;          /* 216 offset of the variable part in the side buffer */
    uint16_t var_len;          /* 220 its length in bytes */
    uint16_t line;             /* 222 OPRA line (set by the feed handler; 0 from decode_packet) */
    uint16_t index;            /* 224 position of the message in its packet */
    uint16_t y_count;          /* 226 slot 39 or 40: entries of a 'Y' group */
    uint8_t category;          /* 228 slot 0 as sent: 'a' 'k' 'd' 'f' 'Y' 'C' 'H' or '?' */
    uint8_t msg_type;          /* 229 slot 1 */
    uint8_t participant;       /* 230 slot 2 */
    uint8_t retrans;           /* 231 slot 3 */
    uint8_t month_code;        /* 232 slot 7 */
    uint8_t expiry_day;        /* 233 slot 8 */
    uint8_t expiry_year;       /* 234 slot 9 */
    uint8_t strike_den;        /* 235 slot 10 */
    uint8_t strike_code;       /* 236 slot 12 */
    uint8_t premium_den;       /* 237 slot 15 */
    uint8_t net_change_ind;    /* 238 slot 21 */
    uint8_t underlying_den;    /* 239 slot 23 */
    uint8_t session;           /* 240 slot 29 */
    uint8_t bbo_ind;           /* 241 slot 30 */
    uint8_t best_bid_part;     /* 242 slot 31 */
    uint8_t best_bid_den;      /* 243 slot 32 */
    uint8_t best_offer_part;   /* 244 slot 35 */
    uint8_t best_offer_den;    /* 245 slot 36 */
    uint8_t put_call;          /* 246 'C' or 'P' from the month code, 0 if none */
    uint8_t root_len;          /* 247 bytes of root used */
    char root[OMDP_OPRA_ROOT_MAX]; /* 248 slot 6 as received, NUL padded */
    uint8_t wire;              /* 254 the wire format: 0 FAST V2, else OMDP_OBI_WIRE_* bits (opra_obi.h) */
    uint8_t reserved;          /* 255 zero */
} omdp_opra_msg_t;

/* One entry of a 'Y' group in the side buffer (32 bytes). String slots keep their bytes
 * as received (NUL padded) with their lengths, so they render and re-encode exactly. */
typedef struct omdp_opra_y_entry {
    char symbol[4];            /*  0 slot 41 (index) or 45 (FCO) */
    char value[8];             /*  4 slot 42 (type ' ') or 43 (bid, type 'I') */
    char offer[8];             /* 12 slot 44 (offer, type 'I') */
    uint32_t spot;             /* 20 slot 47 (type 'F'/'C') */
    uint8_t symbol_len;        /* 24 */
    uint8_t value_len;         /* 25 */
    uint8_t offer_len;         /* 26 */
    uint8_t decimals;          /* 27 slot 46 (type 'F'/'C') */
    uint8_t reserved[4];       /* 28 */
} omdp_opra_y_entry_t;
/* cdef: end */

#endif /* OMDP_OPRA_MSG_H */
