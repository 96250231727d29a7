/* The engine's zeroed arrays. Those of 2 MiB or more are fresh anonymous mappings, zero by
 * the kernel's promise, so creating an engine costs no pass over memory it may never use (a
 * replay task's engine touches the pages of the series its bucket sees, a fraction of
 * max_series). A live operator pre-faults them where it starts (omdp_engine_prefault), so
 * its hot path never takes a first-touch fault. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine_internal.h"

#define ENG_HUGE ((size_t)2 << 20)

static size_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (size_t)p : 4096;
}

/* What eng_map_zeroed maps for an array of 2 MiB or more: whole 2 MiB pages. */
static size_t mapped_bytes(size_t bytes)
{
    return (bytes + ENG_HUGE - 1) / ENG_HUGE * ENG_HUGE;
}

void *eng_map_zeroed(size_t bytes)
{
    if (bytes < ENG_HUGE) {
        /* Small arrays (the engine itself, groups, twins of a small engine): zeroing them costs
         * nothing, and kept on the heap they are laid out as they always were. */
        size_t rounded = bytes ? (bytes + 63) / 64 * 64 : 64;
        void *p = aligned_alloc(64, rounded);
        if (p)
            memset(p, 0, rounded);
        return p;
    }
    size_t len = mapped_bytes(bytes);
    /* Over-map by 2 MiB and trim both ends, so the array starts on a 2 MiB boundary and
     * transparent huge pages can back it: the hot path reads it at random, and on 4 KiB pages
     * nearly every message missed the TLB several times (a page walk, nested in a VM). */
    size_t over = len + ENG_HUGE;
    uint8_t *raw = mmap(NULL, over, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return NULL;
    uintptr_t a = ((uintptr_t)raw + ENG_HUGE - 1) & ~(uintptr_t)(ENG_HUGE - 1);
    uint8_t *p = (uint8_t *)a;
    size_t head = (size_t)(p - raw), tail = over - head - len;
    if (head)
        (void)munmap(raw, head);
    if (tail)
        (void)munmap(p + len, tail);
#ifdef MADV_HUGEPAGE
    (void)madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

void eng_unmap(void *p, size_t bytes)
{
    if (!p)
        return;
    if (bytes < ENG_HUGE)
        free(p);
    else
        (void)munmap(p, mapped_bytes(bytes));
}

void eng_prefault(void *p, size_t bytes)
{
    if (!p || bytes < ENG_HUGE)
        return; /* small arrays were zeroed, so touched, when allocated */
    size_t len = mapped_bytes(bytes);
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
        return;
#endif
    /* Older kernels: write each page once (its own value: the content stays as it was). */
    size_t step = page_size();
    volatile uint8_t *b = p;
    for (size_t i = 0; i < len; i += step)
        b[i] = b[i];
}
