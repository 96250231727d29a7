/* The quote fast path's field values, all fields of a message at once (AVX-512 VBMI/VBMI2).
 *
 * A message's fields are unsigned integers of 7-bit groups, most significant first, the last
 * byte of each carrying the stop bit (spec section 3). Instead of one field at a time (find
 * its end, load, byte swap, compact), the positions of all stop bits are packed into one
 * vector (vpcompressb), which gives every field's first and last byte; one byte permute per
 * 8 fields then puts each field's bytes, least significant group first, into its own 64-bit
 * lane, and two multiply-adds squeeze the 7-bit groups together. No data-dependent branch,
 * no loop over fields.
 *
 * Compiled only where the build's -march has AVX-512 VBMI and VBMI2
 * (OPRA_FAST_VECTOR_FIELDS); elsewhere the decoder keeps its field-by-field loop.
 * Reads nothing but the 64 bytes given as a vector. Not part of the ABI. */
#ifndef OMDP_OPRA_FAST_FIELDS_H
#define OMDP_OPRA_FAST_FIELDS_H

#include <stdint.h>

#if defined(__AVX512VBMI2__) && defined(__AVX512VBMI__) && defined(__AVX512BW__) && defined(__AVX512DQ__)
#define OPRA_FAST_VECTOR_FIELDS 1
#include <immintrin.h>

/* Constants of opra_field_values, loaded once per packet (the caller's registers). */
typedef struct opra_field_consts {
    __m512i iota;   /* byte i = i */
    __m512i jvec;   /* byte 8q+j = j: a byte's place in its lane, least significant first */
    __m512i qvec;   /* byte 8q+j = q: its lane */
} opra_field_consts_t;

static inline opra_field_consts_t opra_field_consts(void) {
    opra_field_consts_t c;
    c.iota = _mm512_set_epi8(63, 62, 61, 60, 59, 58, 57, 56, 55, 54, 53, 52, 51, 50, 49, 48, 47, 46, 45, 44, 43, 42, 41,
                             40, 39, 38, 37, 36, 35, 34, 33, 32, 31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18,
                             17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
    c.jvec = _mm512_set1_epi64(0x0706050403020100LL);
    c.qvec = _mm512_set_epi64(0x0707070707070707LL, 0x0606060606060606LL, 0x0505050505050505LL, 0x0404040404040404LL,
                              0x0303030303030303LL, 0x0202020202020202LL, 0x0101010101010101LL, 0);
    return c;
}

/* The positions of the stop bits in `stops`, in order, as bytes (zeros after the last):
 * E[0] ends the presence map, E[i + 1] field i. */
static inline __m512i opra_stop_positions(const opra_field_consts_t *c, uint64_t stops) {
    return _mm512_maskz_compress_epi8(stops, c->iota);
}

/* Lane q <- the value of field 8g+q (0 past the last field), from the message's first 64
 * bytes w7 with the stop bits cleared and the stop positions E. The caller has checked that
 * every field is 1..5 bytes long. */
static inline __m512i opra_field_group(const opra_field_consts_t *c, __m512i w7, __m512i E, unsigned g) {
    __m512i lane = _mm512_add_epi8(c->qvec, _mm512_set1_epi8((char)(8 * g)));
    __m512i beg = _mm512_permutexvar_epi8(lane, E);                                   /* E[8g+q]: before the field */
    __m512i end = _mm512_permutexvar_epi8(_mm512_add_epi8(lane, _mm512_set1_epi8(1)), E); /* E[8g+q+1]: its last byte */
    __m512i idx = _mm512_sub_epi8(end, c->jvec); /* its j-th byte from the end */
    /* inside the field (signed: end - j may go below 0); lanes past the last field have
     * end == 0, so they stay empty */
    __mmask64 in = _mm512_cmpgt_epi8_mask(idx, beg);
    __m512i bytes = _mm512_maskz_permutexvar_epi8(in, idx, w7);
    __m512i h = _mm512_maddubs_epi16(_mm512_set1_epi16(0x8001), bytes); /* b0 + 128 b1: <= 16383 */
    __m512i d = _mm512_madd_epi16(h, _mm512_set1_epi32(0x40000001));    /* h0 + 16384 h1: 28 bits */
    return _mm512_or_si512(_mm512_and_si512(d, _mm512_set1_epi64(0xFFFFFFFFLL)),
                           _mm512_slli_epi64(_mm512_srli_epi64(d, 32), 28));
}

/* The 8 values from field `first` on, out of lo (fields 8g..8g+7) and hi (the next 8),
 * 8g <= first; lanes past field 8g+15 wrap around. */
static inline __m512i opra_fields_from(__m512i lo, __m512i hi, unsigned first) {
    return _mm512_permutex2var_epi64(lo, _mm512_add_epi64(_mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0), _mm512_set1_epi64(first)), hi);
}

#endif
#endif /* OMDP_OPRA_FAST_FIELDS_H */
