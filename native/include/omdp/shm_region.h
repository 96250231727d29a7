/* Named POSIX shared-memory regions: the one way omdp creates and maps them.
 *
 * Every segment omdp shares between processes (Vega rings, the replayer's control and
 * intended-time tables, the run's stats segment, the reshard segment) is made the same way:
 * created exclusively and private to the user (mode 0600 whatever the umask), sized, mapped,
 * and on any failure removed again, so a half-made segment is never left behind. Callers
 * keep their own names, layouts and error codes; these return 0 or a negative errno. */
#ifndef OMDP_SHM_REGION_H
#define OMDP_SHM_REGION_H

#include <stdint.h>

/* Which step of a create or map failed (for messages that name it). */
typedef enum omdp_shm_step {
    OMDP_SHM_STEP_NONE = 0,
    OMDP_SHM_STEP_OPEN,     /* shm_open */
    OMDP_SHM_STEP_SIZE,     /* fchmod/ftruncate on create, fstat on map */
    OMDP_SHM_STEP_MAP,      /* mmap */
} omdp_shm_step_t;

/* Create `path` ("/name") of `size` bytes (> 0), zero-filled, mapped read-write (pre-faulted
 * when `populate`). -EEXIST when it exists; on any error nothing is left behind. `step`, when
 * not NULL, says which step failed. */
int omdp_shm_create(const char *path, uint64_t size, int populate, void **base, omdp_shm_step_t *step);

/* Map an existing `path` whole, read-only or read-write (pre-faulted when `populate`).
 * -ENOENT when it does not exist; -ENODATA when it is smaller than `min_size` (at least 1:
 * a segment being created is not sized yet). */
int omdp_shm_map(const char *path, int writable, int populate, uint64_t min_size, void **base, uint64_t *size,
                 omdp_shm_step_t *step);

/* The name of a step, for messages ("shm_open", "ftruncate", "mmap"). */
const char *omdp_shm_step_name(omdp_shm_step_t step, int creating);

#endif
