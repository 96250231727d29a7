/* Names of the operator contract's error codes, and how an init refuses its parameters
 * (operator.h). */
#include "omdp/operator.h"

#include <stdarg.h>
#include <stdio.h>

const char *omdp_strerror(int code)
{
    switch (code) {
    case OMDP_OK: return "ok";
    case OMDP_ERR_PARAMS: return "bad parameters";
    case OMDP_ERR_NOMEM: return "out of memory";
    case OMDP_ERR_PORT: return "no such port";
    case OMDP_ERR_RECORD: return "malformed record";
    case OMDP_ERR_TOO_BIG: return "record larger than the channel's max_message";
    case OMDP_ERR_PEER_GONE: return "peer gone";
    case OMDP_ERR_STOPPED: return "stopped";
    case OMDP_ERR_PYTHON: return "Python operator or channel raised";
    case OMDP_ERR_CHANNEL: return "transport failed";
    case OMDP_ERR_STATE: return "runtime used out of order";
    default: return "unknown error";
    }
}

int omdp_op_init_fail(const omdp_op_init_t *init, const char *fmt, ...)
{
    if (init->err && init->err_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(init->err, init->err_size, fmt, ap);
        va_end(ap);
    }
    return OMDP_ERR_PARAMS;
}
