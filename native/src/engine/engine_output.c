/* Index an engine's output buffer by record type, so a consumer splits samples from signals
 * in one call instead of walking the records itself. */
#include "engine_internal.h"

int32_t omdp_engine_index_output(const uint8_t *buf, uint32_t len, uint32_t *sample_offs, uint32_t sample_cap,
                                 uint32_t *n_samples, uint32_t *signal_offs, uint32_t signal_cap,
                                 uint32_t *n_signals)
{
    if ((!buf && len) || !n_samples || !n_signals)
        return -1;
    uint32_t pos = 0, records = 0, ns = 0, ng = 0;
    while (pos < len) {
        if (len - pos < OMDP_RECORD_HEADER_SIZE)
            return -1;
        omdp_record_header_t h;
        memcpy(&h, buf + pos, sizeof h);
        if (h.length < OMDP_RECORD_HEADER_SIZE || (h.length & 7u) || h.length > len - pos)
            return -1;
        if (h.type == OMDP_RT_SIGNAL) {
            if (ng < signal_cap && signal_offs)
                signal_offs[ng] = pos;
            ng++;
        } else if (h.type == OMDP_RT_OPRA_MSG) {
            if (ns < sample_cap && sample_offs)
                sample_offs[ns] = pos;
            ns++;
        }
        pos += h.length;
        records++;
    }
    *n_samples = ns;
    *n_signals = ng;
    return (int32_t)records;
}
