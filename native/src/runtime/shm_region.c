/* Named POSIX shared-memory regions (omdp/shm_region.h): create exclusively, size, map. */
#define _GNU_SOURCE
#include "omdp/shm_region.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int fail(omdp_shm_step_t *step, omdp_shm_step_t at, int e)
{
    if (step)
        *step = at;
    return -e;
}

int omdp_shm_create(const char *path, uint64_t size, int populate, void **base, omdp_shm_step_t *step)
{
    if (step)
        *step = OMDP_SHM_STEP_NONE;
    if (!path || !base || size == 0 || size > (uint64_t)INT64_MAX)
        return -EINVAL;
    int fd = shm_open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
        return fail(step, OMDP_SHM_STEP_OPEN, errno);
    if (fchmod(fd, 0600) != 0 || ftruncate(fd, (off_t)size) != 0) {
        int e = errno;
        close(fd);
        shm_unlink(path);
        return fail(step, OMDP_SHM_STEP_SIZE, e);
    }
    void *p = mmap(NULL, (size_t)size, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) {
        shm_unlink(path);
        return fail(step, OMDP_SHM_STEP_MAP, e);
    }
    *base = p;
    return 0;
}

int omdp_shm_map(const char *path, int writable, int populate, uint64_t min_size, void **base, uint64_t *size,
                 omdp_shm_step_t *step)
{
    if (step)
        *step = OMDP_SHM_STEP_NONE;
    if (!path || !base || !size)
        return -EINVAL;
    /* O_NONBLOCK: a FIFO someone left under an omdp name must not hang the opener; it is
     * then refused as not a regular file (shm_open adds O_NOFOLLOW: no symlinks either). */
    int fd = shm_open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0);
    if (fd < 0)
        return fail(step, OMDP_SHM_STEP_OPEN, errno == ELOOP ? EINVAL : errno);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return fail(step, OMDP_SHM_STEP_SIZE, e);
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return fail(step, OMDP_SHM_STEP_OPEN, EINVAL);
    }
    if (st.st_size <= 0 || (uint64_t)st.st_size < min_size) {
        close(fd);
        return fail(step, OMDP_SHM_STEP_SIZE, ENODATA);
    }
    int prot = PROT_READ | (writable ? PROT_WRITE : 0);
    void *p = mmap(NULL, (size_t)st.st_size, prot, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        return fail(step, OMDP_SHM_STEP_MAP, e);
    *base = p;
    *size = (uint64_t)st.st_size;
    return 0;
}

const char *omdp_shm_step_name(omdp_shm_step_t step, int creating)
{
    switch (step) {
    case OMDP_SHM_STEP_OPEN:
        return "shm_open";
    case OMDP_SHM_STEP_SIZE:
        return creating ? "ftruncate" : "fstat";
    case OMDP_SHM_STEP_MAP:
        return "mmap";
    default:
        return "shm";
    }
}
