/* LTTng-UST tracepoint provider for scripts/lttng.sh: one event with the
 * same payload as a qtrace record (id, source, two 64-bit arguments; LTTng
 * adds its own timestamp). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER qtrace_bench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./tp.h"

#if !defined(QTRACE_BENCH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define QTRACE_BENCH_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(
    qtrace_bench,
    event,
    LTTNG_UST_TP_ARGS(uint16_t, id, uint32_t, source, uint64_t, a0, uint64_t, a1),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer(uint16_t, id, id)
        lttng_ust_field_integer(uint32_t, source, source)
        lttng_ust_field_integer(uint64_t, a0, a0)
        lttng_ust_field_integer(uint64_t, a1, a1)
    )
)

#endif

#include <lttng/tracepoint-event.h>
