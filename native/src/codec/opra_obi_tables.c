/* Tables and small helpers of the OBI codec: message lengths, appendage lengths, the block
 * checksum, Eastern time of day, error names. */
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "opra_obi_internal.h"

const uint8_t omdp_obi_base_len[256] = {
    ['a'] = 43, ['d'] = 30, ['f'] = 72, ['k'] = 43, ['q'] = 29,
    ['C'] = 14, ['H'] = 12, ['R'] = 155, ['Y'] = 27,
};

/* Spec 5.2: 20 for 'O', 10 for C G K M N P, 0 for every other value (space, unknown letters). */
const uint8_t omdp_obi_app_len[256] = {
    ['O'] = 20, ['C'] = 10, ['G'] = 10, ['K'] = 10, ['M'] = 10, ['N'] = 10, ['P'] = 10,
};

/* Spec Q1, the reading chosen: a sum of unsigned bytes (not of 16-bit words) over bytes 0-18
 * and everything from 21 on, pad byte included; the low 16 bits of the 32-bit sum. The bytes
 * are summed 16 (or 64) at a time with a sum of absolute differences against zero; the
 * checksum's own two bytes are taken out afterwards. */
uint16_t omdp_obi_checksum(const uint8_t *blk, size_t len)
{
    uint64_t sum = 0;
    size_t i = 0;
#if defined(__AVX512BW__)
    __m512i acc = _mm512_setzero_si512();
    for (; i + 64 <= len; i += 64)
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_loadu_si512((const void *)(blk + i)), _mm512_setzero_si512()));
    if (i < len) { /* a masked load reads only the bytes that are there */
        __mmask64 m = _bzhi_u64(~0ULL, (unsigned)(len - i));
        acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(m, blk + i), _mm512_setzero_si512()));
        i = len;
    }
    sum = (uint64_t)_mm512_reduce_add_epi64(acc);
#elif defined(__SSE2__)
    __m128i acc = _mm_setzero_si128();
    for (; i + 16 <= len; i += 16)
        acc = _mm_add_epi64(acc, _mm_sad_epu8(_mm_loadu_si128((const __m128i *)(const void *)(blk + i)), _mm_setzero_si128()));
    sum = (uint64_t)_mm_cvtsi128_si64(acc) + (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(acc, acc));
#endif
    for (; i < len; i++)
        sum += blk[i];
    if (len > 19)
        sum -= blk[19];
    if (len > 20)
        sum -= blk[20];
    return (uint16_t)sum;
}

/* Days since 1970-01-01 of a civil date (proleptic Gregorian; H. Hinnant's algorithm). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

static int64_t year_of_days(int64_t z)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    unsigned m = mp < 10 ? mp + 3 : mp - 9;
    return (int64_t)yoe + era * 400 + (m <= 2);
}

/* The n-th Sunday (n >= 1) of a month, as days since the epoch (day 0 was a Thursday). */
static int64_t nth_sunday(int64_t y, unsigned m, int n)
{
    int64_t first = days_from_civil(y, m, 1);
    int64_t wd = ((first % 7) + 7 + 4) % 7; /* 0 = Sunday */
    return first + (7 - wd) % 7 + 7 * (n - 1);
}

/* US Eastern time since 2007: EDT (UTC-4) from the second Sunday of March 02:00 EST (07:00
 * UTC) to the first Sunday of November 02:00 EDT (06:00 UTC), EST (UTC-5) otherwise. */
uint32_t omdp_obi_eastern_hhmmss(uint32_t utc_sec)
{
    int64_t t = (int64_t)utc_sec;
    int64_t y = year_of_days(t / 86400);
    int64_t start = nth_sunday(y, 3, 2) * 86400 + 7 * 3600;
    int64_t end = nth_sunday(y, 11, 1) * 86400 + 6 * 3600;
    int64_t local = t - (t >= start && t < end ? 4 : 5) * 3600;
    int64_t sod = ((local % 86400) + 86400) % 86400;
    return (uint32_t)(sod / 3600 * 10000 + sod / 60 % 60 * 100 + sod % 60);
}

const char *omdp_obi_error_name(int code)
{
    switch (code) {
    case OMDP_OBI_E_TRUNCATED: return "TRUNCATED";
    case OMDP_OBI_E_BAD_VERSION: return "BAD_VERSION";
    case OMDP_OBI_E_BAD_SIZE: return "BAD_SIZE";
    case OMDP_OBI_E_SIZE_PAST_DATAGRAM: return "SIZE_PAST_DATAGRAM";
    case OMDP_OBI_E_CHECKSUM: return "CHECKSUM";
    case OMDP_OBI_E_UNKNOWN_CATEGORY: return "UNKNOWN_CATEGORY";
    case OMDP_OBI_E_MSG_PAST_BLOCK: return "MSG_PAST_BLOCK";
    case OMDP_OBI_E_TRAILING_BYTES: return "TRAILING_BYTES";
    case OMDP_OBI_E_TEXT_TOO_LONG: return "TEXT_TOO_LONG";
    case OMDP_OBI_E_MSG_COUNT: return "MSG_COUNT";
    case OMDP_OBI_E_NOT_ALONE: return "NOT_ALONE";
    case OMDP_OBI_E_CATEGORY: return "CATEGORY";
    case OMDP_OBI_E_SHORT_RANGE: return "SHORT_RANGE";
    case OMDP_OBI_E_VALUE_RANGE: return "VALUE_RANGE";
    case OMDP_OBI_E_VAR_OUTSIDE: return "VAR_OUTSIDE";
    case OMDP_OBI_E_BLOCK_TOO_BIG: return "BLOCK_TOO_BIG";
    case OMDP_OBI_E_CAPACITY: return "CAPACITY";
    default: return "UNKNOWN";
    }
}
