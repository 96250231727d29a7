/* Internals shared by the OBI decoder and encoder (opra_obi.h): big-endian field access,
 * message lengths (spec 5.2), appendages (7.6), the record's `fields` bits per category
 * (FAST V2's slot numbers, so consumers that mask columns by them need no second rule).
 * Not part of the ABI. */
#ifndef OMDP_OPRA_OBI_INTERNAL_H
#define OMDP_OPRA_OBI_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "omdp/opra_obi.h"
#include "opra_fast_internal.h"

static inline uint16_t obi_rd16(const uint8_t *p) { return (uint16_t)(((unsigned)p[0] << 8) | p[1]); }
static inline uint32_t obi_rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return __builtin_bswap32(v); }
static inline uint64_t obi_rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return __builtin_bswap64(v); }
static inline void obi_wr16(uint8_t *p, uint32_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void obi_wr32(uint8_t *p, uint32_t v) { v = __builtin_bswap32(v); memcpy(p, &v, 4); }
static inline void obi_wr64(uint8_t *p, uint64_t v) { v = __builtin_bswap64(v); memcpy(p, &v, 8); }

/* Fixed length of a message by category byte; 0 for a category OBI does not define (5.2). */
extern const uint8_t omdp_obi_base_len[256];
/* Appendage bytes by BBO indicator (7.6): 20 for 'O', 10 for C G K M N P, else 0. */
extern const uint8_t omdp_obi_app_len[256];

/* The `fields` bits of a decoded message: FAST V2 slot k = the record field that slot fills. */
#define OBI_S_HDR (SLOT(0) | SLOT(1) | SLOT(2) | SLOT(3) | SLOT(4) | SLOT(5))
#define OBI_S_SERIES (SLOT(6) | SLOT(7) | SLOT(8) | SLOT(9) | SLOT(10) | SLOT(11))
#define OBI_F_A (OBI_S_HDR | OBI_S_SERIES | SLOT(13) | SLOT(15) | SLOT(16) | SLOT(29))
#define OBI_F_D (OBI_S_HDR | OBI_S_SERIES | SLOT(14))
#define OBI_F_F (OBI_S_HDR | OBI_S_SERIES | SLOT(13) | SLOT(14) | SLOT(15) | SLOT(17) | SLOT(18) | SLOT(19) | \
                 SLOT(20) | SLOT(21) | SLOT(22) | SLOT(23) | SLOT(24) | SLOT(25) | SLOT(27))
#define OBI_F_K (OBI_S_HDR | OBI_S_SERIES | SLOT(15) | SLOT(25) | SLOT(26) | SLOT(27) | SLOT(28) | SLOT(29) | SLOT(30))
#define OBI_F_BEST_BID (SLOT(31) | SLOT(32) | SLOT(33) | SLOT(34))
#define OBI_F_BEST_OFFER (SLOT(35) | SLOT(36) | SLOT(37) | SLOT(38))
#define OBI_F_C (OBI_S_HDR | SLOT(48))
#define OBI_F_H OBI_S_HDR
#define OBI_F_R (OBI_S_HDR | OBI_S_SERIES)
#define OBI_F_Y_LAST (OBI_S_HDR | SLOT(6) | SLOT(23) | SLOT(24))
#define OBI_F_Y_BBO (OBI_S_HDR | SLOT(6) | SLOT(23) | SLOT(25) | SLOT(27))

/* Has the indicator a best-bid / best-offer appendage? (7.6: i = ind - 'A', bid state
 * i >> 2 == 3, offer state i & 3 == 2; only 'A'..'P' have states.) */
static inline int obi_has_bid_app(uint8_t ind) { return ind >= 'A' && ind <= 'P' && ((ind - 'A') >> 2) == 3; }
static inline int obi_has_offer_app(uint8_t ind) { return ind >= 'A' && ind <= 'P' && ((ind - 'A') & 3) == 2; }

#endif /* OMDP_OPRA_OBI_INTERNAL_H */
