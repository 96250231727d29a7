/* Tables of the OPRA FAST V2 codec: where each slot lives in the record, the slot set of
 * each message layout (spec sections 4 and 5), and the value codes of section 6. */
#include <stddef.h>

#include "opra_fast_internal.h"

#define F(field, kind) {offsetof(omdp_opra_msg_t, field), kind, 0}

const slot_info_t omdp_opra_slots[OMDP_OPRA_SLOTS] = {
    [0] = F(category, K_U8),
    [1] = F(msg_type, K_U8),
    [2] = F(participant, K_U8),
    [3] = F(retrans, K_U8),
    [4] = F(msg_seq, K_U64),
    [5] = F(time, K_U32),
    [6] = {offsetof(omdp_opra_msg_t, root), K_ROOT, OMDP_OPRA_ROOT_MAX},
    [7] = F(month_code, K_U8),
    [8] = F(expiry_day, K_U8),
    [9] = F(expiry_year, K_U8),
    [10] = F(strike_den, K_U8),
    [11] = F(strike, K_U32),
    [12] = F(strike_code, K_U8),
    [13] = F(volume, K_U32),
    [14] = F(open_interest, K_U32),
    [15] = F(premium_den, K_U8),
    [16] = F(premium, K_U32),
    [17] = F(open, K_U32),
    [18] = F(high, K_U32),
    [19] = F(low, K_U32),
    [20] = F(last, K_U32),
    [21] = F(net_change_ind, K_U8),
    [22] = F(net_change, K_U32),
    [23] = F(underlying_den, K_U8),
    [24] = F(underlying_raw, K_U64),
    [25] = F(bid, K_U32),
    [26] = F(bid_size, K_U32),
    [27] = F(offer, K_U32),
    [28] = F(offer_size, K_U32),
    [29] = F(session, K_U8),
    [30] = F(bbo_ind, K_U8),
    [31] = F(best_bid_part, K_U8),
    [32] = F(best_bid_den, K_U8),
    [33] = F(best_bid, K_U32),
    [34] = F(best_bid_size, K_U32),
    [35] = F(best_offer_part, K_U8),
    [36] = F(best_offer_den, K_U8),
    [37] = F(best_offer, K_U32),
    [38] = F(best_offer_size, K_U32),
    [39] = {0, K_YCOUNT, 0},
    [40] = {0, K_YCOUNT, 0},
    [41] = {offsetof(omdp_opra_y_entry_t, symbol), K_YSTR, 4},
    [42] = {offsetof(omdp_opra_y_entry_t, value), K_YSTR, 8},
    [43] = {offsetof(omdp_opra_y_entry_t, value), K_YSTR, 8},
    [44] = {offsetof(omdp_opra_y_entry_t, offer), K_YSTR, 8},
    [45] = {offsetof(omdp_opra_y_entry_t, symbol), K_YSTR, 4},
    [46] = {offsetof(omdp_opra_y_entry_t, decimals), K_YU8, 0},
    [47] = {offsetof(omdp_opra_y_entry_t, spot), K_YU32, 0},
    [48] = {0, K_TEXT, 0},
    [49] = {0, K_TEXT, 0},
};

#define S_K (S_HDR | S_SERIES | SLOT(15) | SLOT(25) | SLOT(26) | SLOT(27) | SLOT(28) | SLOT(29) | SLOT(30))

const uint64_t omdp_opra_layout_slots[L_COUNT] = {
    [L_A] = S_HDR | S_SERIES | SLOT(13) | SLOT(15) | SLOT(16) | SLOT(29),
    [L_K] = S_K,
    [L_K_BID] = S_K | S_BEST_BID,
    [L_K_OFFER] = S_K | S_BEST_OFFER,
    [L_K_BOTH] = S_K | S_BEST_BID | S_BEST_OFFER,
    [L_D] = S_HDR | S_SERIES | SLOT(14),
    [L_F] = S_HDR | S_SERIES | SLOT(13) | SLOT(14) | SLOT(15) | SLOT(17) | SLOT(18) | SLOT(19) | SLOT(20) |
            SLOT(21) | SLOT(22) | SLOT(23) | SLOT(24) | SLOT(25) | SLOT(27),
    [L_Y_SPACE] = S_HDR | SLOT(39) | SLOT(41) | SLOT(42),
    [L_Y_I] = S_HDR | SLOT(39) | SLOT(41) | SLOT(43) | SLOT(44),
    [L_Y_FC] = S_HDR | SLOT(40) | SLOT(45) | SLOT(46) | SLOT(47),
    [L_TEXT] = S_HDR | SLOT(48),
    [L_DEFAULT] = SLOT(0) | SLOT(49),
};

const uint8_t omdp_opra_bbo_kind[256] = {
    ['M'] = 1, ['N'] = 1, ['P'] = 1, ['C'] = 2, ['G'] = 2, ['K'] = 2, ['O'] = 3,
};

const int64_t omdp_opra_den_mult[256] = {
    ['A'] = 100000000LL, ['B'] = 10000000LL, ['C'] = 1000000LL, ['D'] = 100000LL,
    ['E'] = 10000LL, ['F'] = 1000LL, ['G'] = 100LL, ['H'] = 10LL, ['I'] = 1000000000LL,
};

const uint8_t omdp_opra_month[256] = {
    ['A'] = 1, ['B'] = 2, ['C'] = 3, ['D'] = 4, ['E'] = 5, ['F'] = 6,
    ['G'] = 7, ['H'] = 8, ['I'] = 9, ['J'] = 10, ['K'] = 11, ['L'] = 12,
    ['M'] = 1, ['N'] = 2, ['O'] = 3, ['P'] = 4, ['Q'] = 5, ['R'] = 6,
    ['S'] = 7, ['T'] = 8, ['U'] = 9, ['V'] = 10, ['W'] = 11, ['X'] = 12,
};

const uint8_t omdp_opra_put_call[256] = {
    ['A' ... 'L'] = 'C',
    ['M' ... 'X'] = 'P',
};

#define R7(b) (uint8_t)((((b) >> 6) & 1) | (((b) >> 4) & 2) | (((b) >> 2) & 4) | ((b) & 8) | \
                        (((b) << 2) & 16) | (((b) << 4) & 32) | (((b) << 6) & 64))
#define R7x8(b) R7(b), R7(b + 1), R7(b + 2), R7(b + 3), R7(b + 4), R7(b + 5), R7(b + 6), R7(b + 7)
const uint8_t omdp_opra_rev7[128] = {
    R7x8(0), R7x8(8), R7x8(16), R7x8(24), R7x8(32), R7x8(40), R7x8(48), R7x8(56),
    R7x8(64), R7x8(72), R7x8(80), R7x8(88), R7x8(96), R7x8(104), R7x8(112), R7x8(120),
};

const char *omdp_opra_error_name(int code) {
    switch (code) {
    case OMDP_OPRA_E_TRUNCATED: return "TRUNCATED";
    case OMDP_OPRA_E_BAD_SOH: return "BAD_SOH";
    case OMDP_OPRA_E_BAD_VERSION: return "BAD_VERSION";
    case OMDP_OPRA_E_BAD_ETX: return "BAD_ETX";
    case OMDP_OPRA_E_BAD_COUNT: return "BAD_COUNT";
    case OMDP_OPRA_E_COUNT_MISMATCH: return "COUNT_MISMATCH";
    case OMDP_OPRA_E_OVERLONG_INT: return "OVERLONG_INT";
    case OMDP_OPRA_E_NO_DICT_VALUE: return "NO_DICT_VALUE";
    case OMDP_OPRA_E_NO_PREVIOUS: return "NO_PREVIOUS";
    case OMDP_OPRA_E_PMAP_TOO_LONG: return "PMAP_TOO_LONG";
    case OMDP_OPRA_E_MSG_PAST_PACKET: return "MSG_PAST_PACKET";
    case OMDP_OPRA_E_FIELD_PAST_MSG: return "FIELD_PAST_MSG";
    case OMDP_OPRA_E_STRING_TOO_LONG: return "STRING_TOO_LONG";
    case OMDP_OPRA_E_VALUE_RANGE: return "VALUE_RANGE";
    case OMDP_OPRA_E_UNUSED_SLOT: return "UNUSED_SLOT";
    case OMDP_OPRA_E_TRAILING_BYTES: return "TRAILING_BYTES";
    case OMDP_OPRA_E_UNKNOWN_CATEGORY: return "UNKNOWN_CATEGORY";
    case OMDP_OPRA_E_Y_TYPE: return "Y_TYPE";
    case OMDP_OPRA_E_EMPTY_STRING: return "EMPTY_STRING";
    case OMDP_OPRA_E_BAD_STRING_BYTE: return "BAD_STRING_BYTE";
    case OMDP_OPRA_E_LONG_NOT_LAST: return "LONG_NOT_LAST";
    case OMDP_OPRA_E_MSG_COUNT: return "MSG_COUNT";
    case OMDP_OPRA_E_VAR_OUTSIDE: return "VAR_OUTSIDE";
    case OMDP_OPRA_E_MSG_TOO_BIG: return "MSG_TOO_BIG";
    case OMDP_OPRA_E_CAPACITY: return "CAPACITY";
    case OMDP_OPRA_E_PACKET_TOO_BIG: return "PACKET_TOO_BIG";
    default: return "UNKNOWN";
    }
}
