/* The record of a 'k' quote written straight from the dictionary held in vector registers
 * (the quote fast path, AVX-512 VBMI): four 64-byte stores built by permutes, instead of
 * about forty scalar loads and stores. Gives the very bytes the field-by-field path's
 * emit_start/emit_header/emit_series/emit_k write (tests compare the two on every record).
 *
 * The dictionary arrives as d0, d1, d3, d4: the slots 0-7, 8-15, 24-31 and 32-39, one
 * 64-bit lane each (slots 16-23 are never in a quote). Not part of the ABI. */
#ifndef OMDP_OPRA_FAST_QUOTE_RECORD_H
#define OMDP_OPRA_FAST_QUOTE_RECORD_H

#include "opra_fast_fields.h"
#include "opra_fast_internal.h"

#ifdef OPRA_FAST_VECTOR_FIELDS
#include <stddef.h>

/* A record's first 64 bytes: the record header of a blank record and the block sequence,
 * the same for every message of a packet. */
static inline __m512i quote_record_head(const omdp_opra_msg_t *blank, uint64_t block_seq) {
    return _mm512_mask_set1_epi64(_mm512_loadu_si512((const void *)blank), 1u << 7, (int64_t)block_seq);
}

/* Byte b of slot s, as an index into the pair (d0, d1) or (d3, d4) of vpermt2b. */
#define QB01(s, b) ((s) * 8 + (b))
#define QB34(s, b) (((s) - 24) * 8 + (b))

/* Writes the record of a quote whose dictionary is d0..d4 (its final values: the root,
 * the incremented sequence number), BBO kind `kind`; month_code, day and year are slots 7-9. */
static inline void quote_record_write(omdp_opra_msg_t *o, __m512i head, __m512i d0, __m512i d1, __m512i d3, __m512i d4,
                                      int kind, uint64_t fields, uint16_t index) {
    __m128i dy = _mm512_castsi512_si128(d1); /* slots 8 (day), 9 (year) */
    uint64_t month_code = (uint64_t)_mm_extract_epi64(_mm512_extracti64x2_epi64(d0, 3), 1); /* slot 7 */
    uint64_t day = (uint64_t)_mm_cvtsi128_si64(dy), year = (uint64_t)_mm_extract_epi64(dy, 1);
    /* prices: strike (10, 11), bid (15, 25), offer (15, 27), best bid (32, 33), best offer
     * (36, 37), as px(): value x multiplier of the denominator code, INT64_MAX when the code
     * is not 'A'..'I'. Values are < 2^32 (checked) and multipliers <= 1e9: one 32x32 multiply. */
    __m512i val = _mm512_permutex2var_epi64(d1, _mm512_set_epi64(0, 0, 0, 0, 0, 11, 9, 3), d3);
    val = _mm512_mask_permutexvar_epi64(val, 0x18, _mm512_set_epi64(0, 0, 0, 5, 1, 0, 0, 0), d4);
    __m512i den = _mm512_permutexvar_epi64(_mm512_set_epi64(0, 0, 0, 0, 0, 7, 7, 2), d1);
    den = _mm512_mask_permutexvar_epi64(den, 0x18, _mm512_set_epi64(0, 0, 0, 4, 0, 0, 0, 0), d4);
    __m512i code = _mm512_sub_epi64(den, _mm512_set1_epi64('A'));
    __mmask8 known = _mm512_cmplt_epu64_mask(code, _mm512_set1_epi64(9));
    __m512i mult = _mm512_permutex2var_epi64(_mm512_loadu_si512((const void *)(omdp_opra_den_mult + 'A')), code,
                                             _mm512_loadu_si512((const void *)(omdp_opra_den_mult + 'A' + 8)));
    __m512i px = _mm512_mask_mov_epi64(_mm512_set1_epi64(INT64_MAX), known, _mm512_mul_epu32(val, mult));

    /* bytes 64-127: msg_seq (slot 4), fields, underlying_raw 0, strike/bid/offer px,
     * premium_px 0, best bid px (kind 1, 3) */
    __m512i r1 = _mm512_maskz_permutex2var_epi64((__mmask8)((kind & 1) ? 0xB9 : 0x39), d0,
                                                 _mm512_set_epi64(11, 0, 10, 9, 8, 0, 0, 4), px);
    r1 = _mm512_mask_set1_epi64(r1, 0x02, (int64_t)fields);

    /* bytes 128-191 as 32-bit words: best offer px (kind 2, 3), time (slot 5), expiry,
     * underlying_id (none), strike (11), zeros, bid (25), bid size (26) */
    __m512i r2a = _mm512_maskz_permutex2var_epi32((__mmask16)((kind & 2) ? 0x0007 : 0x0004), px,
                                                  _mm512_set_epi32(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 26, 9, 8), d0);
    __m512i r2b = _mm512_maskz_permutex2var_epi32((__mmask16)0xC020, d1,
                                                  _mm512_set_epi32(20, 18, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0), d3);
    uint32_t mo = omdp_opra_month[month_code & 0xFF];
    uint32_t expiry = 0;
    if (mo && day >= 1 && day <= 31 && year <= 99) expiry = (2000u + (uint32_t)year) * 10000u + mo * 100u + (uint32_t)day;
    __m512i r2 = _mm512_or_si512(r2a, r2b);
    r2 = _mm512_mask_set1_epi32(r2, 0x0010, (int)OMDP_NO_UNDERLYING);
    r2 = _mm512_mask_set1_epi32(r2, 0x0008, (int)expiry);

    /* bytes 192-255: offer (27), offer size (28), best bid/size (33, 34; kind 1, 3), best
     * offer/size (37, 38; kind 2, 3), var_off/var_len/line 0, index, y_count 0, then the
     * character codes, put_call, root_len and the root */
    const __m512i idx34 = _mm512_set_epi8(
        0, 0, 0, 0, 0, 0, 0, 0,                                                      /* 248-255 */
        0, 0, QB34(36, 0), QB34(35, 0), QB34(32, 0), QB34(31, 0), QB34(30, 0), QB34(29, 0), /* 240-247 */
        0, 0, 0, 0, 0, 0, 0, 0,                                                      /* 232-239 */
        0, 0, 0, 0, 0, 0, 0, 0,                                                      /* 224-231 */
        0, 0, 0, 0, 0, 0, 0, 0,                                                      /* 216-223 */
        QB34(38, 3), QB34(38, 2), QB34(38, 1), QB34(38, 0), QB34(37, 3), QB34(37, 2), QB34(37, 1), QB34(37, 0),
        QB34(34, 3), QB34(34, 2), QB34(34, 1), QB34(34, 0), QB34(33, 3), QB34(33, 2), QB34(33, 1), QB34(33, 0),
        QB34(28, 3), QB34(28, 2), QB34(28, 1), QB34(28, 0), QB34(27, 3), QB34(27, 2), QB34(27, 1), QB34(27, 0));
    const __m512i idx01 = _mm512_set_epi8(
        0, 0, QB01(6, 5), QB01(6, 4), QB01(6, 3), QB01(6, 2), QB01(6, 1), QB01(6, 0), /* 248-255: the root */
        QB01(6, 7), 0, 0, 0, 0, 0, 0, 0,                                               /* 240-247: root_len */
        0, 0, QB01(15, 0), QB01(12, 0), QB01(10, 0), QB01(9, 0), QB01(8, 0), QB01(7, 0), /* 232-239 */
        QB01(3, 0), QB01(2, 0), QB01(1, 0), QB01(0, 0), 0, 0, 0, 0,                     /* 224-231 */
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0); /* 192-223 */
    /* bytes taken from (d3, d4): 0-7 always, 8-15 and 50-51 for a best bid, 16-23 and
     * 52-53 for a best offer, 48-49 always; from (d0, d1): 36-45, 55-61 */
    __m512i r3a = _mm512_maskz_permutex2var_epi8(
        (__mmask64)(0x00030000000000FFULL | ((kind & 1) ? 0x000C00000000FF00ULL : 0) |
                    ((kind & 2) ? 0x0030000000FF0000ULL : 0)),
        d3, idx34, d4);
    __m512i r3b = _mm512_maskz_permutex2var_epi8((__mmask64)0x3F803FF000000000ULL, d0, idx01, d1);
    __m512i r3 = _mm512_or_si512(r3a, r3b);
    r3 = _mm512_mask_set1_epi16(r3, 1u << 16, (short)index);                       /* byte 224 */
    r3 = _mm512_mask_set1_epi8(r3, 1ULL << 54, (char)omdp_opra_put_call[month_code & 0xFF]); /* byte 246 */

    _mm512_storeu_si512((void *)o, head);
    _mm512_storeu_si512((void *)((char *)o + 64), r1);
    _mm512_storeu_si512((void *)((char *)o + 128), r2);
    _mm512_storeu_si512((void *)((char *)o + 192), r3);
}

#else /* no AVX-512 VBMI: the record as 8-byte words */
#include <stddef.h>
#include <string.h>

/* Word i (bytes 8i .. 8i + 7) of a record. */
static inline void put_word(omdp_opra_msg_t *o, int i, uint64_t v) { memcpy((char *)o + 8 * i, &v, sizeof v); }

/* px() of the decoder: a value times its denominator's multiplier, INT64_MAX for a code
 * that is not 'A'..'I'. */
static inline uint64_t quote_px(uint64_t den, uint64_t v) {
    int64_t m = omdp_opra_den_mult[den & 0xFF];
    return m ? (uint64_t)((int64_t)v * m) : (uint64_t)OMDP_UNDEF_PRICE;
}

/* Writes the record of a quote from its final dictionary dv (values already checked to fit
 * their fields; slot 4 incremented, slot 6 the root with its length on top), BBO kind
 * `kind`. Every 8-byte word is composed in registers and stored once: the record used to
 * be a copy of the blank record and some forty narrow stores over it, which kept the store
 * unit busier than the rest of the quote path. Gives the very bytes emit_start, emit_header,
 * emit_series and emit_k write (tests compare the two on every record). */
static inline void quote_record_write_words(omdp_opra_msg_t *o, const uint64_t *dv, uint64_t block_seq, int kind,
                                            uint64_t fields, uint16_t index) {
    _Static_assert(sizeof(omdp_opra_msg_t) == 256 && offsetof(omdp_opra_msg_t, block_seq) == 56 &&
                       offsetof(omdp_opra_msg_t, best_offer_px) == 128 && offsetof(omdp_opra_msg_t, time) == 136 &&
                       offsetof(omdp_opra_msg_t, bid) == 184 && offsetof(omdp_opra_msg_t, var_off) == 216 &&
                       offsetof(omdp_opra_msg_t, index) == 224 && offsetof(omdp_opra_msg_t, month_code) == 232 &&
                       offsetof(omdp_opra_msg_t, session) == 240 && offsetof(omdp_opra_msg_t, root) == 248,
                   "the word layout below follows omdp_opra_msg_t");
    const uint64_t bb = (uint64_t)0 - (uint64_t)(kind & 1), bo = (uint64_t)0 - (uint64_t)((kind >> 1) & 1);
    const uint64_t mc = dv[7] & 0xFF, day = dv[8], year = dv[9];
    const uint32_t mo = omdp_opra_month[mc];
    const uint64_t expiry = (mo && day >= 1 && day <= 31 && year <= 99) ? (2000u + year) * 10000u + mo * 100u + day : 0;
    put_word(o, 0, (uint64_t)OMDP_RT_OPRA_MSG | (uint64_t)OMDP_OPRA_MSG_SIZE << 16); /* type, length, flags 0 */
    for (int i = 1; i <= 6; i++) put_word(o, i, 0);                             /* stamps */
    put_word(o, 7, block_seq);
    put_word(o, 8, dv[4]);
    put_word(o, 9, fields);
    put_word(o, 10, 0);                                                               /* underlying_raw */
    put_word(o, 11, quote_px(dv[10], dv[11]));
    put_word(o, 12, quote_px(dv[15], dv[25]));
    put_word(o, 13, quote_px(dv[15], dv[27]));
    put_word(o, 14, 0);                                                               /* premium_px */
    put_word(o, 15, quote_px(dv[32], dv[33]) & bb);
    put_word(o, 16, quote_px(dv[36], dv[37]) & bo);
    put_word(o, 17, dv[5] | expiry << 32);                                            /* time, expiry */
    put_word(o, 18, (uint64_t)OMDP_NO_UNDERLYING | dv[11] << 32);                     /* underlying_id, strike */
    for (int i = 19; i <= 22; i++) put_word(o, i, 0);                                       /* volume .. net_change */
    put_word(o, 23, dv[25] | dv[26] << 32);                                           /* bid, bid_size */
    put_word(o, 24, dv[27] | dv[28] << 32);                                           /* offer, offer_size */
    put_word(o, 25, (dv[33] | dv[34] << 32) & bb);                                    /* best bid, size */
    put_word(o, 26, (dv[37] | dv[38] << 32) & bo);                                    /* best offer, size */
    put_word(o, 27, 0);                                                               /* var_off, var_len, line */
    put_word(o, 28, (uint64_t)index | dv[0] << 32 | dv[1] << 40 | dv[2] << 48 | dv[3] << 56); /* y_count 0 */
    put_word(o, 29, mc | day << 8 | year << 16 | dv[10] << 24 | dv[12] << 32 | dv[15] << 40); /* 2 zero codes */
    put_word(o, 30, dv[29] | dv[30] << 8 | ((dv[31] | dv[32] << 8) << 16 & bb) | ((dv[35] | dv[36] << 8) << 32 & bo) |
            (uint64_t)omdp_opra_put_call[mc] << 48 | (dv[6] >> 56) << 56);  /* ..., put_call, root_len */
    put_word(o, 31, dv[6] & 0xFFFFFFFFFFFFULL);                                       /* root, reserved 0 */
}

#endif
#endif /* OMDP_OPRA_FAST_QUOTE_RECORD_H */
