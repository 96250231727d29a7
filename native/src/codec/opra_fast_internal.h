/* Internals shared by the OPRA FAST V2 decoder, encoder and renderer: the slot table (which
 * record field holds each slot), the message layouts (which slots a message uses, in wire
 * order) and the value tables (denominators, month codes). Not part of the ABI. */
#ifndef OMDP_OPRA_FAST_INTERNAL_H
#define OMDP_OPRA_FAST_INTERNAL_H

#include <stdint.h>
#include <string.h>

#include "omdp/opra_fast.h"

#define SLOT(k) (1ULL << (k))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

/* Slot kinds. Character slots and numbers are unsigned integers on the wire. */
enum { K_U8 = 1, K_U32 = 4, K_U64 = 8, K_ROOT = 16, K_YCOUNT, K_YSTR, K_YU8, K_YU32, K_TEXT };

typedef struct slot_info {
    uint16_t off;   /* offset of the record field (K_U8/K_U32/K_U64/K_ROOT) */
    uint8_t kind;
    uint8_t cap;    /* strings: most bytes the record field holds */
} slot_info_t;

extern const slot_info_t omdp_opra_slots[OMDP_OPRA_SLOTS];

/* Layouts: the slot set of a message, chosen by category, BBO indicator and 'Y' type. */
enum {
    L_A, L_K, L_K_BID, L_K_OFFER, L_K_BOTH, L_D, L_F, L_Y_SPACE, L_Y_I, L_Y_FC, L_TEXT, L_DEFAULT,
    L_COUNT
};

#define S_HDR (SLOT(0) | SLOT(1) | SLOT(2) | SLOT(3) | SLOT(4) | SLOT(5))
#define S_SERIES (SLOT(6) | SLOT(7) | SLOT(8) | SLOT(9) | SLOT(10) | SLOT(11) | SLOT(12))
#define S_BEST_BID (SLOT(31) | SLOT(32) | SLOT(33) | SLOT(34))
#define S_BEST_OFFER (SLOT(35) | SLOT(36) | SLOT(37) | SLOT(38))
#define S_STRINGS (SLOT(6) | SLOT(41) | SLOT(42) | SLOT(43) | SLOT(44) | SLOT(45) | SLOT(48) | SLOT(49))
#define S_Y_ENTRY (SLOT(41) | SLOT(42) | SLOT(43) | SLOT(44) | SLOT(45) | SLOT(46) | SLOT(47))

extern const uint64_t omdp_opra_layout_slots[L_COUNT];

/* 'k' appendages by BBO indicator: 0 none, 1 best bid, 2 best offer, 3 both. */
extern const uint8_t omdp_opra_bbo_kind[256];
/* Price multiplier to 1e-9 units by denominator code; 0 for codes that are not 'A'..'I'. */
extern const int64_t omdp_opra_den_mult[256];
/* Month (1..12) by expiration month code, 0 if not 'A'..'X'; put/call by code. */
extern const uint8_t omdp_opra_month[256];
extern const uint8_t omdp_opra_put_call[256];
/* The 7 data bits of a pmap byte reversed, so bit k of the result is slot 7i+k. */
extern const uint8_t omdp_opra_rev7[128];

/* Layout of a 'Y' message by type (slot 1), or -1. */
static inline int y_layout(uint8_t type) {
    switch (type) {
    case ' ': return L_Y_SPACE;
    case 'I': return L_Y_I;
    case 'F':
    case 'C': return L_Y_FC;
    default: return -1;
    }
}

/* Decimal digits of v, at least `width` wide (zero padded). Returns bytes written (<= 20). */
static inline int put_digits(char *out, uint64_t v, int width) {
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < width) tmp[n++] = '0';
    for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
    return n;
}

#endif /* OMDP_OPRA_FAST_INTERNAL_H */
