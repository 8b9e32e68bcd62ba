/* The checker's side-channel protocol: message structs and their encoding into frames.
 * A frame is a 12-byte header {magic "NCGW", version, type, flags, payload length}, all
 * integers big-endian, followed by a bounded payload. Decoding is pure and total: any byte
 * string yields either a message, "need more bytes", or an error (then the connection drops). */
#ifndef NCG_WIRE_H
#define NCG_WIRE_H

#include "wire_base.h"
#include "wire_relay.h"

/* DONE and RELEASE: the communicator whose error verdict they are about. */
struct ncg_msg_exit {
    uint64_t comm_id;
};

struct ncg_msg {
    uint8_t type; /* enum ncg_msg_type */
    union {
        struct ncg_msg_hello hello;
        struct ncg_msg_welcome welcome;
        struct ncg_msg_report report;
        struct ncg_msg_query query;
        struct ncg_msg_answer answer;
        struct ncg_msg_p2p p2p;
        struct ncg_msg_goodbye goodbye;
        struct ncg_msg_wait wait;
        struct ncg_msg_exit exit;
        struct ncg_verdict *verdict; /* owned by the message: ncg_verdict_free */
        struct ncg_msg_rhello rhello;
        struct ncg_msg_rstat rstat;
        struct ncg_msg_rfault rfault;
        struct ncg_msg_ranswer *ranswer; /* owned by the message (ncg_msg_release) */
        struct ncg_msg_rverdict rverdict;
        struct ncg_msg_rwhere rwhere;
        struct ncg_msg_rhere rhere;
        struct ncg_msg_rp2p rp2p;
        struct ncg_msg_rwait *rwait; /* owned by the message (ncg_msg_release) */
        struct ncg_msg_rfigq rfigq;
        struct ncg_msg_rfiga *rfiga; /* owned by the message (ncg_msg_release) */
        struct ncg_msg_rslow *rslow; /* owned by the message (ncg_msg_release) */
    } u;
};

/* Encodes m as one frame into buf (capacity cap). Returns the frame length, or -ENOSPC /
 * -EINVAL. Any thread, no allocation. */
long ncg_wire_encode(const struct ncg_msg *m, uint8_t *buf, size_t cap);
/* The same for one connection's sending end: a REPORT is encoded against *ref (NULL: whole),
 * which then holds it; ref changes only when the frame is encoded. */
long ncg_wire_encode_ref(const struct ncg_msg *m, uint8_t *buf, size_t cap,
                         struct ncg_report_ref *ref);

/* Decodes the first frame of buf[0..len). Returns the frame length consumed (>0), 0 when more
 * bytes are needed, or -EBADMSG / -EPROTO / -EMSGSIZE on a malformed frame. A VERDICT's
 * struct is allocated (malloc): the caller frees it with ncg_verdict_free. Any thread.
 * A REPORT with compact entries (v5) needs the connection's reference: ncg_wire_decode_ref. */
long ncg_wire_decode(const uint8_t *buf, size_t len, struct ncg_msg *m);
/* The same for one connection's receiving end: REPORT entries are rebuilt from *ref (NULL:
 * only whole entries), which then holds the REPORT; ref changes only when a frame decodes.
 * Both write only the decoded type's member of m->u, as if zeroed then filled: its fields and
 * its entries below each count; entries beyond a count and other members keep what *m held. */
long ncg_wire_decode_ref(const uint8_t *buf, size_t len, struct ncg_msg *m,
                         struct ncg_report_ref *ref);

/* Frees what a decoded message owns (a VERDICT's struct); safe on any message. */
void ncg_msg_release(struct ncg_msg *m);

#endif
