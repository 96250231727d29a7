/* OPRA's participant exchanges (spec 8.1) as the engine's book lanes: the one table every
 * engine file maps participant codes with. Alphabetical, so FAST V2's six (A B C I P X) and
 * today's feed keep their NBBO tie order; 'O' (OPRA itself) quotes nothing and has no lane. */
#include "engine_internal.h"

const uint8_t eng_exch_code[OMDP_ENGINE_EXCHANGES] = {'A', 'B', 'C', 'D', 'E', 'G', 'H', 'I', 'J', 'M',
                                                      'N', 'P', 'Q', 'S', 'T', 'U', 'V', 'W', 'X', 'Z'};

const uint8_t eng_exch_of[256] = {
    ['A'] = 1,  ['B'] = 2,  ['C'] = 3,  ['D'] = 4,  ['E'] = 5,  ['G'] = 6,  ['H'] = 7,
    ['I'] = 8,  ['J'] = 9,  ['M'] = 10, ['N'] = 11, ['P'] = 12, ['Q'] = 13, ['S'] = 14,
    ['T'] = 15, ['U'] = 16, ['V'] = 17, ['W'] = 18, ['X'] = 19, ['Z'] = 20,
};
