/* The `mpi` transport (channel_mpi.h): pre-posted receives into a ring of slots, credits
 * back to the sender, every wait an MPI_Test poll against a stop flag. */
#define _GNU_SOURCE
#include "omdp/channel_mpi.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "omdp/clock.h"
#include "omdp/partition_channels.h"

#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif

#define CTL_WORDS 4
#define CLOSE_WAIT_NS 1000000000LL /* how long close waits for sends still in flight */
#define BLOCK_SPINS 256            /* spin-block: polls before the waits start sleeping */
#define BLOCK_SLEEP_NS 20000
#define PROGRESS_NS 50000          /* the progress thread's poll while MPI holds a send */

/* ---- the job ------------------------------------------------------------------------- */

static MPI_Comm g_comm = MPI_COMM_NULL; /* our duplicate of MPI_COMM_WORLD */
static int64_t g_max_channel;
static char g_init_err[OMDP_MPI_ERR_LEN];

static void mpi_text(int rc, const char *what, char *out, size_t len)
{
    char msg[MPI_MAX_ERROR_STRING];
    int n = 0;
    if (MPI_Error_string(rc, msg, &n) != MPI_SUCCESS)
        n = 0;
    msg[n < MPI_MAX_ERROR_STRING ? n : MPI_MAX_ERROR_STRING - 1] = 0;
    snprintf(out, len, "%s: %s (MPI error %d)", what, n ? msg : "unknown", rc);
}

/* The progress thread. MPI moves a message only inside an MPI call; an Isend that found the
 * peer's shared-memory queue full stays in the sender's process until its next call, and a
 * sender that goes quiet (done, or waiting on something else) would hold it forever. So
 * where MPI_THREAD_MULTIPLE is provided, one thread per process finishes what senders left
 * in flight: it sleeps until a put leaves a send unfinished, then tests those sends every
 * PROGRESS_NS (taking each sender's lock only when it is free) until none is left. */
static pthread_mutex_t g_reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_reg_cond = PTHREAD_COND_INITIALIZER;
static omdp_mpi_sender_t *g_senders; /* every open sender, linked by ->next */
static int g_work, g_progress_stop, g_progress_on;
static pthread_t g_progress;

static void *progress_loop(void *arg);

/* The thread level asked of MPI: OMDP_MPI_THREADS=multiple (the default: any thread may use
 * any end) or serialized (one thread at a time; Open MPI then takes no lock per call). */
static int wanted_level(void)
{
    const char *v = getenv("OMDP_MPI_THREADS");
    return v && strcmp(v, "serialized") == 0 ? MPI_THREAD_SERIALIZED : MPI_THREAD_MULTIPLE;
}

int omdp_mpi_init(int *rank, int *size, int *thread_level)
{
    int inited = 0, finalized = 0, rc;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (finalized) {
        snprintf(g_init_err, sizeof g_init_err, "MPI was finalised in this process; it cannot start again");
        return OMDP_MPI_E_NO_INIT;
    }
    int provided = MPI_THREAD_SINGLE;
    if (!inited) {
        rc = MPI_Init_thread(NULL, NULL, wanted_level(), &provided);
        if (rc != MPI_SUCCESS) {
            mpi_text(rc, "MPI_Init_thread", g_init_err, sizeof g_init_err);
            return OMDP_MPI_E_MPI;
        }
    } else {
        MPI_Query_thread(&provided);
    }
    if (g_comm == MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        rc = MPI_Comm_dup(MPI_COMM_WORLD, &g_comm);
        if (rc != MPI_SUCCESS) {
            mpi_text(rc, "MPI_Comm_dup", g_init_err, sizeof g_init_err);
            return OMDP_MPI_E_MPI;
        }
        MPI_Comm_set_errhandler(g_comm, MPI_ERRORS_RETURN);
        int *ub = NULL, flag = 0;
        MPI_Comm_get_attr(g_comm, MPI_TAG_UB, &ub, &flag);
        g_max_channel = flag && ub ? (*ub - 1) / 2 : 16383;
    }
    if (provided == MPI_THREAD_MULTIPLE && !g_progress_on) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old); /* signals stay with the process's own threads */
        g_progress_stop = 0;
        g_progress_on = pthread_create(&g_progress, NULL, progress_loop, NULL) == 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    MPI_Comm_rank(g_comm, rank);
    MPI_Comm_size(g_comm, size);
    *thread_level = provided;
    return OMDP_VEGA_OK;
}

int omdp_mpi_finalize(void)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return OMDP_VEGA_OK;
    if (g_progress_on) {
        pthread_mutex_lock(&g_reg_lock);
        g_progress_stop = 1;
        pthread_cond_signal(&g_reg_cond);
        pthread_mutex_unlock(&g_reg_lock);
        pthread_join(g_progress, NULL);
        g_progress_on = 0;
    }
    if (g_comm != MPI_COMM_NULL)
        MPI_Comm_free(&g_comm);
    int rc = MPI_Finalize();
    if (rc != MPI_SUCCESS) {
        mpi_text(rc, "MPI_Finalize", g_init_err, sizeof g_init_err);
        return OMDP_MPI_E_MPI;
    }
    return OMDP_VEGA_OK;
}

const char *omdp_mpi_init_error(void) { return g_init_err; }
int64_t omdp_mpi_max_channel(void) { return g_comm == MPI_COMM_NULL ? 0 : g_max_channel; }

/* An MPI return code as a transport status: a dead or revoked peer is PEER_DEAD. */
static int status_of(int rc, const char *what, char *err)
{
    if (rc == MPI_SUCCESS)
        return OMDP_VEGA_OK;
    int cls = rc;
    MPI_Error_class(rc, &cls);
#ifdef MPIX_ERR_PROC_FAILED
    if (cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_REVOKED) {
        mpi_text(rc, what, err, OMDP_MPI_ERR_LEN);
        return OMDP_VEGA_E_PEER_DEAD;
    }
#endif
    mpi_text(rc, what, err, OMDP_MPI_ERR_LEN);
    return OMDP_MPI_E_MPI;
}

/* Deadlines read CLOCK_REALTIME itself (omdp_realtime_ns), not the omdp clock: a wait needs
 * no host correction, and this module (omdp._native_mpi) has no omdp._native symbols. */
static int64_t deadline_of(int64_t timeout_ns)
{
    int64_t now = omdp_realtime_ns();
    return timeout_ns < 0 || timeout_ns > INT64_MAX - now ? INT64_MAX : now + timeout_ns;
}

/* One poll of a wait: spin, yield, or (after a while) sleep, as the wait knob says. */
static void pause_once(uint32_t wait, uint64_t polls)
{
    if (wait == OMDP_VEGA_WAIT_SPIN_YIELD) {
        sched_yield();
    } else if (wait == OMDP_VEGA_WAIT_SPIN_BLOCK && polls > BLOCK_SPINS) {
        struct timespec ts = {0, BLOCK_SLEEP_NS};
        nanosleep(&ts, NULL);
    } else {
        omdp_vega_pause();
    }
}

static int check_args(int peer, int64_t id, uint32_t queue_size, uint32_t max_message)
{
    if (g_comm == MPI_COMM_NULL)
        return OMDP_MPI_E_NO_INIT;
    int size = 0;
    MPI_Comm_size(g_comm, &size);
    if (peer < 0 || peer >= size || id < 0 || id > g_max_channel)
        return OMDP_VEGA_E_BAD_SPEC;
    if (queue_size < OMDP_VEGA_MIN_QUEUE_SIZE || queue_size > OMDP_VEGA_MAX_QUEUE_SIZE ||
        (queue_size & (queue_size - 1)) || max_message < OMDP_VEGA_MIN_MESSAGE ||
        max_message > OMDP_VEGA_MAX_MESSAGE_LIMIT || max_message > INT32_MAX)
        return OMDP_VEGA_E_BAD_SPEC;
    return OMDP_VEGA_OK;
}

/* ---- receiver ------------------------------------------------------------------------ */

struct omdp_mpi_receiver {
    int peer, data_tag, ctl_tag;
    uint32_t queue_size, max_message, slot_size, wait, credit_every;
    uint8_t *slots;
    int own_slots;
    MPI_Request *req;   /* one posted receive per free slot */
    uint32_t *order;    /* slots in the order their receives were posted */
    uint32_t *sizes;
    uint8_t *held;      /* lent to the caller by get */
    uint64_t posted, taken; /* order[] ring: taken..posted are posted, oldest first */
    uint64_t released, credited;
    uint64_t ctl_out[CTL_WORDS];
    MPI_Request ctl_send;
    uint64_t ctl_in[CTL_WORDS];
    MPI_Request ctl_recv; /* the sender's goodbye */
    uint64_t goodbye_total;
    int goodbye, dead;
    _Atomic int stop;
    omdp_mpi_stats_t st;
    char err[OMDP_MPI_ERR_LEN];
};

static int rx_fail(omdp_mpi_receiver_t *rx, int rc, const char *what)
{
    int st = status_of(rc, what, rx->err);
    if (st == OMDP_VEGA_E_PEER_DEAD) {
        rx->dead = 1;
        rx->st.peer_state = OMDP_VEGA_PEER_DEAD;
    }
    rx->st.errors++;
    return st;
}

static int rx_post(omdp_mpi_receiver_t *rx, uint32_t slot)
{
    int rc = MPI_Irecv(rx->slots + (uint64_t)slot * rx->slot_size, (int)rx->max_message, MPI_BYTE, rx->peer,
                       rx->data_tag, g_comm, &rx->req[slot]);
    if (rc != MPI_SUCCESS)
        return rx_fail(rx, rc, "MPI_Irecv");
    rx->order[rx->posted++ & (rx->queue_size - 1)] = slot;
    return OMDP_VEGA_OK;
}

/* Send a control message unless the previous one is still in flight (then later). */
static int rx_control(omdp_mpi_receiver_t *rx, uint64_t kind, uint64_t count, int *sent)
{
    *sent = 0;
    if (rx->ctl_send != MPI_REQUEST_NULL) {
        int done = 0;
        int rc = MPI_Test(&rx->ctl_send, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return rx_fail(rx, rc, "MPI_Test (credit)");
        if (!done)
            return OMDP_VEGA_OK;
    }
    rx->ctl_out[0] = OMDP_MPI_MAGIC;
    rx->ctl_out[1] = kind;
    rx->ctl_out[2] = count;
    rx->ctl_out[3] = (uint64_t)rx->queue_size << 32 | rx->max_message;
    int rc = MPI_Isend(rx->ctl_out, CTL_WORDS, MPI_UINT64_T, rx->peer, rx->ctl_tag, g_comm, &rx->ctl_send);
    if (rc != MPI_SUCCESS)
        return rx_fail(rx, rc, "MPI_Isend (credit)");
    rx->st.credits++;
    *sent = 1;
    return OMDP_VEGA_OK;
}

static int rx_credit(omdp_mpi_receiver_t *rx)
{
    if (rx->released == rx->credited || rx->dead)
        return OMDP_VEGA_OK;
    int sent = 0, st = rx_control(rx, OMDP_MPI_CREDIT, rx->released, &sent);
    if (sent)
        rx->credited = rx->released;
    return st;
}

/* The sender's goodbye, if it came. */
static int rx_poll_goodbye(omdp_mpi_receiver_t *rx)
{
    if (rx->goodbye || rx->ctl_recv == MPI_REQUEST_NULL)
        return OMDP_VEGA_OK;
    int done = 0;
    MPI_Status status;
    int rc = MPI_Test(&rx->ctl_recv, &done, &status);
    if (rc != MPI_SUCCESS)
        return rx_fail(rx, rc, "MPI_Test (goodbye)");
    if (done) {
        if (rx->ctl_in[0] != OMDP_MPI_MAGIC || rx->ctl_in[1] != OMDP_MPI_GOODBYE) {
            rx->st.errors++;
            snprintf(rx->err, sizeof rx->err, "control message of kind %llu from rank %d is not a goodbye",
                     (unsigned long long)rx->ctl_in[1], rx->peer);
            return OMDP_VEGA_E_CORRUPT;
        }
        rx->goodbye = 1;
        rx->goodbye_total = rx->ctl_in[2];
        rx->st.peer_state = OMDP_VEGA_PEER_CLOSED;
    }
    return OMDP_VEGA_OK;
}

int omdp_mpi_receiver_open(int peer, int64_t id, uint32_t queue_size, uint32_t max_message, uint32_t wait,
                           void *slot_mem, omdp_mpi_receiver_t **out)
{
    int st = check_args(peer, id, queue_size, max_message);
    if (st)
        return st;
    omdp_mpi_receiver_t *rx = calloc(1, sizeof *rx);
    if (!rx)
        return OMDP_VEGA_E_SYS;
    rx->peer = peer;
    rx->data_tag = (int)(2 * id);
    rx->ctl_tag = (int)(2 * id + 1);
    rx->queue_size = queue_size;
    rx->max_message = max_message;
    rx->slot_size = omdp_mpi_slot_size(max_message);
    rx->wait = wait;
    rx->credit_every = queue_size >= 4 ? queue_size / 4 : 1;
    rx->ctl_send = rx->ctl_recv = MPI_REQUEST_NULL;
    rx->st.peer_state = OMDP_VEGA_PEER_ABSENT;
    rx->req = malloc(sizeof *rx->req * queue_size);
    rx->order = malloc(sizeof *rx->order * queue_size);
    rx->sizes = calloc(queue_size, sizeof *rx->sizes);
    rx->held = calloc(queue_size, 1);
    rx->slots = slot_mem;
    if (!slot_mem) {
        rx->slots = aligned_alloc(64, (size_t)queue_size * rx->slot_size);
        rx->own_slots = 1;
    }
    if (!rx->req || !rx->order || !rx->sizes || !rx->held || !rx->slots) {
        omdp_mpi_receiver_close(rx);
        return OMDP_VEGA_E_SYS;
    }
    for (uint32_t i = 0; i < queue_size; i++)
        rx->req[i] = MPI_REQUEST_NULL;
    for (uint32_t i = 0; i < queue_size && !st; i++)
        st = rx_post(rx, i);
    int rc = st ? MPI_SUCCESS : MPI_Irecv(rx->ctl_in, CTL_WORDS, MPI_UINT64_T, peer, rx->ctl_tag, g_comm, &rx->ctl_recv);
    if (!st && rc != MPI_SUCCESS)
        st = rx_fail(rx, rc, "MPI_Irecv (goodbye)");
    int sent = 0;
    if (!st)
        st = rx_control(rx, OMDP_MPI_HELLO, 0, &sent);
    if (st) {
        omdp_mpi_receiver_close(rx);
        return st;
    }
    *out = rx;
    return OMDP_VEGA_OK;
}

/* One look: OK with the next message, EMPTY, PEER_CLOSED once the goodbye's count is read. */
static int rx_try_get(omdp_mpi_receiver_t *rx, omdp_vega_msg_t *msg)
{
    if (rx->taken != rx->posted) {
        uint32_t slot = rx->order[rx->taken & (rx->queue_size - 1)];
        int done = 0;
        MPI_Status status;
        int rc = MPI_Test(&rx->req[slot], &done, &status);
        if (rc != MPI_SUCCESS)
            return rx_fail(rx, rc, "MPI_Test (data)");
        if (done) {
            int count = 0;
            MPI_Get_count(&status, MPI_BYTE, &count);
            rx->taken++;
            rx->held[slot] = 1;
            rx->sizes[slot] = (uint32_t)count;
            if (rx->st.peer_state == OMDP_VEGA_PEER_ABSENT)
                rx->st.peer_state = OMDP_VEGA_PEER_ATTACHED;
            rx->st.messages++;
            rx->st.bytes += (uint64_t)count;
            msg->slot_id = slot;
            msg->size = (uint32_t)count;
            msg->data = rx->slots + (uint64_t)slot * rx->slot_size;
            return OMDP_VEGA_OK;
        }
    }
    if (rx->dead)
        return OMDP_VEGA_E_PEER_DEAD;
    int st = rx_poll_goodbye(rx);
    if (st)
        return st;
    if (rx->goodbye && rx->st.messages >= rx->goodbye_total)
        return OMDP_VEGA_E_PEER_CLOSED;
    st = rx_credit(rx); /* nothing to read: hand back what was released so far */
    return st ? st : OMDP_VEGA_EMPTY;
}

int omdp_mpi_available(omdp_mpi_receiver_t *rx)
{
    if (rx->taken == rx->posted)
        return 0;
    int done = 0;
    uint32_t slot = rx->order[rx->taken & (rx->queue_size - 1)];
    if (MPI_Request_get_status(rx->req[slot], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return 0;
    return done;
}

int omdp_mpi_get(omdp_mpi_receiver_t *rx, omdp_vega_msg_t *msg, int64_t timeout_ns)
{
    int st = rx_try_get(rx, msg);
    if (st != OMDP_VEGA_EMPTY || timeout_ns == 0)
        return st;
    int64_t deadline = deadline_of(timeout_ns);
    for (uint64_t polls = 1;; polls++) {
        if (atomic_load_explicit(&rx->stop, memory_order_acquire))
            return OMDP_MPI_STOPPED;
        pause_once(rx->wait, polls);
        rx->st.spins++;
        st = rx_try_get(rx, msg);
        if (st != OMDP_VEGA_EMPTY)
            return st;
        if ((polls & 63) == 0 && omdp_realtime_ns() >= deadline)
            return OMDP_VEGA_TIMEOUT;
    }
}

int omdp_mpi_release(omdp_mpi_receiver_t *rx, uint32_t slot_id)
{
    if (slot_id >= rx->queue_size || !rx->held[slot_id]) {
        rx->st.errors++;
        return OMDP_VEGA_E_BAD_SLOT;
    }
    rx->held[slot_id] = 0;
    int st = rx_post(rx, slot_id);
    if (st)
        return st;
    rx->released++;
    if (rx->released - rx->credited >= rx->credit_every)
        return rx_credit(rx);
    return OMDP_VEGA_OK;
}

void omdp_mpi_receiver_stop(omdp_mpi_receiver_t *rx) { atomic_store_explicit(&rx->stop, 1, memory_order_release); }

void omdp_mpi_receiver_stats(const omdp_mpi_receiver_t *rx, omdp_mpi_stats_t *out) { *out = rx->st; }

const char *omdp_mpi_receiver_error(const omdp_mpi_receiver_t *rx) { return rx->err; }

/* Wait (bounded) for a request to finish; cancel it first when asked. 1 when done. */
static int settle(MPI_Request *req, int cancel, int64_t deadline)
{
    if (*req == MPI_REQUEST_NULL)
        return 1;
    if (cancel)
        MPI_Cancel(req);
    for (;;) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            done = 1; /* completed in error (a dead peer): nothing is in flight */
        if (done) {
            *req = MPI_REQUEST_NULL;
            return 1;
        }
        if (omdp_realtime_ns() >= deadline)
            return 0;
        sched_yield();
    }
}

int omdp_mpi_receiver_close(omdp_mpi_receiver_t *rx)
{
    if (!rx)
        return OMDP_VEGA_OK;
    int64_t deadline = deadline_of(CLOSE_WAIT_NS);
    int left = 0;
    if (rx->req) {
        if (!rx->dead && !rx->goodbye) { /* tell the sender, after any credit in flight */
            settle(&rx->ctl_send, 0, deadline);
            int sent = 0;
            rx_control(rx, OMDP_MPI_CLOSED, rx->released, &sent);
        }
        for (uint32_t i = 0; i < rx->queue_size; i++)
            left += !settle(&rx->req[i], 1, deadline);
        left += !settle(&rx->ctl_recv, 1, deadline);
        left += !settle(&rx->ctl_send, 0, deadline);
    }
    if (left) {
        /* MPI may still write into these: leave them to the process (a peer that never took
         * our closing message) rather than free memory MPI holds */
        return OMDP_VEGA_OK;
    }
    if (rx->own_slots)
        free(rx->slots);
    free(rx->req);
    free(rx->order);
    free(rx->sizes);
    free(rx->held);
    free(rx);
    return OMDP_VEGA_OK;
}

/* ---- sender -------------------------------------------------------------------------- */

struct omdp_mpi_sender {
    int peer, data_tag, ctl_tag;
    uint32_t queue_size, max_message, wait, on_full;
    pthread_mutex_t lock; /* always taken: the progress thread shares the sender */
    omdp_mpi_sender_t *next;
    _Atomic uint32_t inflight; /* sends MPI still holds (req[] not NULL) */
    uint8_t *slots;
    MPI_Request *req; /* the Isend of each send slot */
    uint64_t sent, granted, released;
    int hello, closed, dead;
    uint64_t ctl_in[CTL_WORDS];
    MPI_Request ctl_recv;
    uint64_t ctl_out[CTL_WORDS];
    MPI_Request ctl_send;
    _Atomic int stop;
    omdp_mpi_stats_t st;
    char err[OMDP_MPI_ERR_LEN];
};

static int tx_fail(omdp_mpi_sender_t *tx, int rc, const char *what)
{
    int st = status_of(rc, what, tx->err);
    if (st == OMDP_VEGA_E_PEER_DEAD) {
        tx->dead = 1;
        tx->st.peer_state = OMDP_VEGA_PEER_DEAD;
    }
    tx->st.errors++;
    return st;
}

/* Take every control message that came (hello, credits, closed). */
static int tx_poll_control(omdp_mpi_sender_t *tx)
{
    while (tx->ctl_recv != MPI_REQUEST_NULL) {
        int done = 0;
        int rc = MPI_Test(&tx->ctl_recv, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS)
            return tx_fail(tx, rc, "MPI_Test (credit)");
        if (!done)
            return OMDP_VEGA_OK;
        const uint64_t *m = tx->ctl_in;
        if (m[0] != OMDP_MPI_MAGIC || m[1] < OMDP_MPI_HELLO || m[1] > OMDP_MPI_CLOSED) {
            tx->st.errors++;
            snprintf(tx->err, sizeof tx->err, "rank %d sent a control message that is not omdp's", tx->peer);
            return OMDP_VEGA_E_CORRUPT;
        }
        tx->st.credits++;
        if (m[1] == OMDP_MPI_HELLO) {
            uint32_t qs = (uint32_t)(m[3] >> 32), mm = (uint32_t)m[3];
            if (qs != tx->queue_size || mm != tx->max_message) {
                snprintf(tx->err, sizeof tx->err,
                         "the receiver's spec differs: queue_size %u, max_message %u (this sender: %u, %u)", qs, mm,
                         tx->queue_size, tx->max_message);
                return OMDP_VEGA_E_LAYOUT;
            }
            tx->hello = 1;
            tx->granted = qs;
            tx->st.peer_state = OMDP_VEGA_PEER_ATTACHED;
        } else if (m[1] == OMDP_MPI_CREDIT) {
            if (m[2] > tx->released && m[2] <= tx->sent)
                tx->released = m[2];
        } else {
            tx->closed = 1;
            tx->st.peer_state = OMDP_VEGA_PEER_CLOSED;
            return OMDP_VEGA_OK; /* nothing more comes on this tag */
        }
        rc = MPI_Irecv(tx->ctl_in, CTL_WORDS, MPI_UINT64_T, tx->peer, tx->ctl_tag, g_comm, &tx->ctl_recv);
        if (rc != MPI_SUCCESS)
            return tx_fail(tx, rc, "MPI_Irecv (credit)");
    }
    return OMDP_VEGA_OK;
}

int omdp_mpi_sender_open(int peer, int64_t id, uint32_t queue_size, uint32_t max_message, uint32_t mutex,
                         uint32_t wait, uint32_t on_full, omdp_mpi_sender_t **out)
{
    int st = check_args(peer, id, queue_size, max_message);
    if (st)
        return st;
    omdp_mpi_sender_t *tx = calloc(1, sizeof *tx);
    if (!tx)
        return OMDP_VEGA_E_SYS;
    tx->peer = peer;
    tx->data_tag = (int)(2 * id);
    tx->ctl_tag = (int)(2 * id + 1);
    tx->queue_size = queue_size;
    tx->max_message = max_message;
    tx->wait = wait;
    tx->on_full = on_full;
    tx->ctl_recv = tx->ctl_send = MPI_REQUEST_NULL;
    tx->st.peer_state = OMDP_VEGA_PEER_ABSENT;
    pthread_mutex_init(&tx->lock, NULL);
    tx->slots = aligned_alloc(64, (size_t)queue_size * omdp_mpi_slot_size(max_message));
    tx->req = malloc(sizeof *tx->req * queue_size);
    if (!tx->slots || !tx->req) {
        free(tx->slots);
        free(tx->req);
        free(tx);
        return OMDP_VEGA_E_SYS;
    }
    for (uint32_t i = 0; i < queue_size; i++)
        tx->req[i] = MPI_REQUEST_NULL;
    pthread_mutex_lock(&g_reg_lock);
    tx->next = g_senders;
    g_senders = tx;
    pthread_mutex_unlock(&g_reg_lock);
    int rc = MPI_Irecv(tx->ctl_in, CTL_WORDS, MPI_UINT64_T, peer, tx->ctl_tag, g_comm, &tx->ctl_recv);
    if (rc != MPI_SUCCESS) {
        st = tx_fail(tx, rc, "MPI_Irecv (hello)");
        omdp_mpi_sender_close(tx);
        return st;
    }
    *out = tx;
    return OMDP_VEGA_OK;
}

/* Test send slot i (lock held): 1 when MPI no longer holds it. */
static int test_send(omdp_mpi_sender_t *tx, uint32_t i, int *rc_out)
{
    if (tx->req[i] == MPI_REQUEST_NULL)
        return 1;
    int done = 0;
    int rc = MPI_Test(&tx->req[i], &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        *rc_out = rc;
        return 0;
    }
    if (done)
        atomic_fetch_sub_explicit(&tx->inflight, 1, memory_order_relaxed);
    return done;
}

static void *progress_loop(void *arg)
{
    pthread_mutex_lock(&g_reg_lock);
    while (!g_progress_stop) {
        if (!g_work) {
            pthread_cond_wait(&g_reg_cond, &g_reg_lock);
            continue;
        }
        int any = 0;
        for (omdp_mpi_sender_t *tx = g_senders; tx; tx = tx->next) {
            if (atomic_load_explicit(&tx->inflight, memory_order_relaxed) == 0)
                continue;
            if (pthread_mutex_trylock(&tx->lock) == 0) {
                int rc = MPI_SUCCESS;
                for (uint32_t i = 0; i < tx->queue_size && rc == MPI_SUCCESS; i++)
                    test_send(tx, i, &rc);
                pthread_mutex_unlock(&tx->lock);
            }
            any |= atomic_load_explicit(&tx->inflight, memory_order_relaxed) > 0;
        }
        g_work = any;
        if (any) {
            pthread_mutex_unlock(&g_reg_lock);
            struct timespec ts = {0, PROGRESS_NS};
            nanosleep(&ts, NULL);
            pthread_mutex_lock(&g_reg_lock);
        }
    }
    pthread_mutex_unlock(&g_reg_lock);
    return NULL;
}

/* Room for one more message now: a credit and a send slot whose last Isend finished. */
static int tx_room(omdp_mpi_sender_t *tx, uint8_t **slot_out)
{
    int st = tx_poll_control(tx);
    if (st)
        return st;
    if (tx->dead)
        return OMDP_VEGA_E_PEER_DEAD;
    if (tx->closed)
        return OMDP_VEGA_E_PEER_CLOSED;
    if (!tx->hello || tx->sent - tx->released >= tx->granted)
        return OMDP_VEGA_FULL;
    uint32_t slot = (uint32_t)(tx->sent & (tx->queue_size - 1));
    int rc = MPI_SUCCESS;
    if (!test_send(tx, slot, &rc))
        return rc != MPI_SUCCESS ? tx_fail(tx, rc, "MPI_Test (send)") : OMDP_VEGA_FULL;
    *slot_out = tx->slots + (uint64_t)slot * omdp_mpi_slot_size(tx->max_message);
    return OMDP_VEGA_OK;
}

static int tx_send(omdp_mpi_sender_t *tx, uint8_t *buf, uint32_t size)
{
    uint32_t slot = (uint32_t)(tx->sent & (tx->queue_size - 1));
    int rc = MPI_Isend(buf, (int)size, MPI_BYTE, tx->peer, tx->data_tag, g_comm, &tx->req[slot]);
    if (rc != MPI_SUCCESS)
        return tx_fail(tx, rc, "MPI_Isend");
    atomic_fetch_add_explicit(&tx->inflight, 1, memory_order_relaxed);
    rc = MPI_SUCCESS;
    if (!test_send(tx, slot, &rc) && rc == MPI_SUCCESS && g_progress_on) {
        /* MPI holds it (the peer's queue is full): the progress thread finishes it */
        pthread_mutex_lock(&g_reg_lock);
        g_work = 1;
        pthread_cond_signal(&g_reg_cond);
        pthread_mutex_unlock(&g_reg_lock);
    }
    tx->sent++;
    tx->st.messages++;
    tx->st.bytes += size;
    return OMDP_VEGA_OK;
}

static int tx_lock(omdp_mpi_sender_t *tx)
{
    pthread_mutex_lock(&tx->lock);
    return 0;
}

static void tx_unlock(omdp_mpi_sender_t *tx)
{
    pthread_mutex_unlock(&tx->lock);
}

int omdp_mpi_ready_to_send(omdp_mpi_sender_t *tx)
{
    tx_lock(tx);
    uint8_t *slot;
    int ok = tx_room(tx, &slot) == OMDP_VEGA_OK;
    tx_unlock(tx);
    return ok;
}

/* put2's work; `drop`: a full channel drops and counts (on_full=drop) instead of waiting. */
static int tx_put(omdp_mpi_sender_t *tx, const void *head, uint32_t head_len, const void *body, uint32_t body_len,
                  int64_t timeout_ns, int drop)
{
    if ((uint64_t)head_len + body_len > tx->max_message)
        return OMDP_VEGA_E_TOO_BIG;
    tx_lock(tx);
    uint8_t *slot = NULL;
    int st = tx_room(tx, &slot);
    if (st == OMDP_VEGA_FULL) {
        tx->st.full_events++;
        if (drop) {
            tx->st.drops++;
            tx_unlock(tx);
            return OMDP_VEGA_FULL;
        }
        int64_t deadline = deadline_of(timeout_ns);
        for (uint64_t polls = 1; st == OMDP_VEGA_FULL && timeout_ns != 0; polls++) {
            if (atomic_load_explicit(&tx->stop, memory_order_acquire)) {
                st = OMDP_MPI_STOPPED;
                break;
            }
            pause_once(tx->wait, polls);
            tx->st.spins++;
            st = tx_room(tx, &slot);
            if (st == OMDP_VEGA_FULL && (polls & 63) == 0 && omdp_realtime_ns() >= deadline) {
                st = OMDP_VEGA_TIMEOUT;
                break;
            }
        }
    }
    if (st == OMDP_VEGA_OK) {
        memcpy(slot, head, head_len);
        if (body_len)
            memcpy(slot + head_len, body, body_len);
        st = tx_send(tx, slot, head_len + body_len);
    }
    tx_unlock(tx);
    return st;
}

int omdp_mpi_put2(omdp_mpi_sender_t *tx, const void *head, uint32_t head_len, const void *body, uint32_t body_len,
                  int64_t timeout_ns)
{
    return tx_put(tx, head, head_len, body, body_len, timeout_ns, tx->on_full == OMDP_VEGA_ON_FULL_DROP);
}

int omdp_mpi_put(omdp_mpi_sender_t *tx, const void *data, uint32_t size, int64_t timeout_ns)
{
    return omdp_mpi_put2(tx, data, size, NULL, 0, timeout_ns);
}

int omdp_mpi_flush(omdp_mpi_sender_t *tx, int64_t timeout_ns)
{
    int64_t deadline = deadline_of(timeout_ns);
    tx_lock(tx);
    int st = OMDP_VEGA_OK;
    for (uint64_t polls = 1;; polls++) {
        st = tx_poll_control(tx);
        if (st)
            break;
        if (tx->dead) {
            st = OMDP_VEGA_E_PEER_DEAD;
            break;
        }
        if (tx->released == tx->sent || tx->closed)
            break;
        if (atomic_load_explicit(&tx->stop, memory_order_acquire)) {
            st = OMDP_MPI_STOPPED;
            break;
        }
        if (timeout_ns == 0 || omdp_realtime_ns() >= deadline) {
            st = OMDP_VEGA_TIMEOUT;
            break;
        }
        pause_once(tx->wait, polls);
    }
    tx_unlock(tx);
    return st;
}

void omdp_mpi_sender_stop(omdp_mpi_sender_t *tx) { atomic_store_explicit(&tx->stop, 1, memory_order_release); }

void omdp_mpi_sender_stats(const omdp_mpi_sender_t *tx, omdp_mpi_stats_t *out) { *out = tx->st; }

const char *omdp_mpi_sender_error(const omdp_mpi_sender_t *tx) { return tx->err; }

int omdp_mpi_sender_close(omdp_mpi_sender_t *tx)
{
    if (!tx)
        return OMDP_VEGA_OK;
    pthread_mutex_lock(&g_reg_lock); /* the progress thread lets go of it */
    for (omdp_mpi_sender_t **p = &g_senders; *p; p = &(*p)->next)
        if (*p == tx) {
            *p = tx->next;
            break;
        }
    pthread_mutex_unlock(&g_reg_lock);
    int64_t deadline = deadline_of(CLOSE_WAIT_NS);
    int left = 0;
    if (!tx->dead && !tx->closed && tx->ctl_recv != MPI_REQUEST_NULL) {
        tx->ctl_out[0] = OMDP_MPI_MAGIC;
        tx->ctl_out[1] = OMDP_MPI_GOODBYE;
        tx->ctl_out[2] = tx->sent;
        tx->ctl_out[3] = (uint64_t)tx->queue_size << 32 | tx->max_message;
        if (MPI_Isend(tx->ctl_out, CTL_WORDS, MPI_UINT64_T, tx->peer, tx->ctl_tag, g_comm, &tx->ctl_send) ==
            MPI_SUCCESS)
            left += !settle(&tx->ctl_send, 0, deadline);
    }
    for (uint32_t i = 0; i < tx->queue_size; i++) {
        int rc = MPI_SUCCESS;
        while (!test_send(tx, i, &rc) && rc == MPI_SUCCESS && omdp_realtime_ns() < deadline)
            sched_yield();
        left += rc == MPI_SUCCESS && tx->req[i] != MPI_REQUEST_NULL;
    }
    left += !settle(&tx->ctl_recv, 1, deadline);
    if (left)
        return OMDP_VEGA_OK; /* sends still held by MPI: their buffers stay (see the receiver's close) */
    pthread_mutex_destroy(&tx->lock);
    free(tx->slots);
    free(tx->req);
    free(tx);
    return OMDP_VEGA_OK;
}

/* ---- as partition channels ----------------------------------------------------------- */

static int mpi_poll(void *ctx, const uint8_t **data, uint32_t *len, uint64_t *slot)
{
    omdp_vega_msg_t m;
    int st = rx_try_get((omdp_mpi_receiver_t *)ctx, &m);
    if (st == OMDP_VEGA_EMPTY)
        return 0;
    if (st != OMDP_VEGA_OK)
        return omdp_chan_status_to_err(st);
    *data = m.data;
    *len = m.size;
    *slot = m.slot_id;
    return 1;
}

static int mpi_release(void *ctx, uint64_t slot)
{
    if (slot > UINT32_MAX)
        return OMDP_ERR_CHANNEL;
    return omdp_chan_status_to_err(omdp_mpi_release((omdp_mpi_receiver_t *)ctx, (uint32_t)slot));
}

static int mpi_try_put(void *ctx, const uint8_t *head, uint32_t head_len, const uint8_t *body, uint32_t body_len)
{
    omdp_mpi_sender_t *tx = ctx;
    if ((uint64_t)head_len + body_len > tx->max_message)
        return OMDP_ERR_TOO_BIG;
    int st = tx_put(tx, head, head_len, body, body_len, 0, 0); /* the loop decides what full means */
    if (st == OMDP_VEGA_FULL || st == OMDP_VEGA_TIMEOUT)
        return OMDP_CHAN_FULL;
    return omdp_chan_status_to_err(st);
}

static const omdp_chan_in_ops_t MPI_IN = {mpi_poll, mpi_release};
static const omdp_chan_out_ops_t MPI_OUT = {mpi_try_put};

const omdp_chan_in_ops_t *omdp_chan_mpi_in_ops(void) { return &MPI_IN; }
const omdp_chan_out_ops_t *omdp_chan_mpi_out_ops(void) { return &MPI_OUT; }
