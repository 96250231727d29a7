/* The `mpi` transport: Vega's five calls over MPI point-to-point messages, for partitions
 * that are ranks of one MPI job (docs/mpi.md). Built only where an MPI was found at build
 * time (native/build_native.py: `*_mpi.c`, `*_mpi.cdef`, `*_mpi.h`).
 *
 * A channel joins two ranks and has a number `id` unique in the job: data travels with
 * tag 2*id, control with tag 2*id+1, on the job's own duplicate of MPI_COMM_WORLD (so a
 * user's MPI traffic never matches ours).
 *
 * Receiver: owns `queue_size` slots of `max_message` bytes and keeps one MPI_Irecv posted
 * into every free slot. Messages of one sender and tag match posted receives in posting
 * order, so the oldest posted receive is the next message; get tests it (MPI_Test), and
 * release_buffer re-posts the slot's receive and returns credits to the sender.
 * Sender: copies a message into one of its own `queue_size` send slots and MPI_Isends it,
 * only while it holds a credit. Credits: the receiver's hello grants `queue_size`; after
 * that the receiver sends its running count of released slots every queue_size/4 releases
 * and whenever it finds nothing to read, so a slow receiver stops the sender (on_full =
 * block waits, drop counts and drops) and MPI never queues an unexpected message.
 *
 * Control messages are four uint64 words: {OMDP_MPI_MAGIC, kind, count,
 * queue_size << 32 | max_message}. HELLO
 * (receiver -> sender, once), CREDIT (receiver -> sender: released so far), CLOSED
 * (receiver -> sender: gone), GOODBYE (sender -> receiver: messages sent in all).
 *
 * MPI moves a message only inside an MPI call: where MPI_THREAD_MULTIPLE is provided (the
 * default ask; OMDP_MPI_THREADS=serialized asks less), one progress thread per process
 * finishes the sends a put left in flight, so a sender that goes quiet still delivers
 * (without it, call omdp_mpi_flush before going quiet). A sender always takes its lock
 * (the progress thread shares it), so the `mutex` knob changes nothing here.
 *
 * Every wait polls MPI_Test (never a blocking MPI call) and checks the end's stop flag,
 * which any thread may set (omdp_mpi_*_stop): the wait then returns OMDP_MPI_STOPPED.
 * Errors return (MPI_ERRORS_RETURN); a peer that died gives OMDP_VEGA_E_PEER_DEAD when the
 * MPI reports MPI_ERR_PROC_FAILED (Open MPI started with `--with-ft ulfm`). Status codes
 * are Vega's (vega.h) plus the two below.
 */
#ifndef OMDP_CHANNEL_MPI_H
#define OMDP_CHANNEL_MPI_H

#include <stdint.h>

#include "omdp/partition.h"
#include "omdp/vega.h"

/* cdef: begin */
#define OMDP_MPI_STOPPED 4       /* a stop request ended the wait (positive: not an error) */
#define OMDP_MPI_E_MPI (-20)     /* an MPI call failed: omdp_mpi_*_error says which and why */
#define OMDP_MPI_E_NO_INIT (-21) /* MPI is not initialised in this process (omdp_mpi_init) */
#define OMDP_MPI_ERR_LEN 256

#define OMDP_MPI_MAGIC 0x4c4e4e414849504dULL /* first word of every control message */
#define OMDP_MPI_HELLO 1u
#define OMDP_MPI_CREDIT 2u
#define OMDP_MPI_CLOSED 3u
#define OMDP_MPI_GOODBYE 4u

typedef struct omdp_mpi_sender omdp_mpi_sender_t;
typedef struct omdp_mpi_receiver omdp_mpi_receiver_t;

typedef struct omdp_mpi_stats {
    uint64_t messages, bytes, full_events, spins, drops, errors, credits; /* credits: control messages */
    int32_t peer_state;                                                   /* OMDP_VEGA_PEER_* as last seen */
    uint32_t reserved;                                                    /* zero: no implicit padding */
} omdp_mpi_stats_t;
/* cdef: end */

/* MPI_Init_thread (MPI_THREAD_MULTIPLE asked) unless MPI is initialised already; errors
 * return on the job's communicator. *rank, *size: this process in MPI_COMM_WORLD. */
int omdp_mpi_init(int *rank, int *size, int *thread_level);
/* MPI_Finalize, once every channel is closed (no-op when not initialised or finalised). */
int omdp_mpi_finalize(void);
/* The last init/finalize failure, or "". */
const char *omdp_mpi_init_error(void);
/* Largest channel id the MPI's tag range allows (0 before init). */
int64_t omdp_mpi_max_channel(void);

/* Bytes per receiver slot: max_message rounded up to a cache line. */
static inline uint32_t omdp_mpi_slot_size(uint32_t max_message)
{
    return (max_message + 63u) & ~63u;
}

/* Receiver of channel `id` from rank `peer`. slot_mem: queue_size * omdp_mpi_slot_size
 * bytes the caller owns and keeps past close (lent views never dangle), or NULL. Posts
 * every receive and sends the hello. wait: OMDP_VEGA_WAIT_*. */
int omdp_mpi_receiver_open(int peer, int64_t id, uint32_t queue_size, uint32_t max_message, uint32_t wait,
                           void *slot_mem, omdp_mpi_receiver_t **out);
int omdp_mpi_available(omdp_mpi_receiver_t *rx);
int omdp_mpi_get(omdp_mpi_receiver_t *rx, omdp_vega_msg_t *msg, int64_t timeout_ns);
int omdp_mpi_release(omdp_mpi_receiver_t *rx, uint32_t slot_id);
void omdp_mpi_receiver_stop(omdp_mpi_receiver_t *rx);
void omdp_mpi_receiver_stats(const omdp_mpi_receiver_t *rx, omdp_mpi_stats_t *out);
const char *omdp_mpi_receiver_error(const omdp_mpi_receiver_t *rx);
int omdp_mpi_receiver_close(omdp_mpi_receiver_t *rx);

/* Sender of channel `id` to rank `peer`; it may send once the receiver's hello came. */
int omdp_mpi_sender_open(int peer, int64_t id, uint32_t queue_size, uint32_t max_message, uint32_t mutex,
                         uint32_t wait, uint32_t on_full, omdp_mpi_sender_t **out);
int omdp_mpi_ready_to_send(omdp_mpi_sender_t *tx);
/* timeout_ns: <0 wait as long as it takes (or until stopped), 0 never wait, >0 at most that. */
int omdp_mpi_put(omdp_mpi_sender_t *tx, const void *data, uint32_t size, int64_t timeout_ns);
/* Two parts sent as one message (the partition loop's frame header and records). */
int omdp_mpi_put2(omdp_mpi_sender_t *tx, const void *head, uint32_t head_len, const void *body, uint32_t body_len,
                  int64_t timeout_ns);
/* Wait until every message sent was taken by the receiver's MPI (timeout_ns as put). */
int omdp_mpi_flush(omdp_mpi_sender_t *tx, int64_t timeout_ns);
void omdp_mpi_sender_stop(omdp_mpi_sender_t *tx);
void omdp_mpi_sender_stats(const omdp_mpi_sender_t *tx, omdp_mpi_stats_t *out);
const char *omdp_mpi_sender_error(const omdp_mpi_sender_t *tx);
int omdp_mpi_sender_close(omdp_mpi_sender_t *tx);

/* The ends as partition channels (partition.h): input ctx an omdp_mpi_receiver_t *, output
 * ctx an omdp_mpi_sender_t *. */
const omdp_chan_in_ops_t *omdp_chan_mpi_in_ops(void);
const omdp_chan_out_ops_t *omdp_chan_mpi_out_ops(void);

#endif /* OMDP_CHANNEL_MPI_H */
