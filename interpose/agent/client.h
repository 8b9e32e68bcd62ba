/* The checker thread of a guarded process: one per process, started at the first
 * communicator (or ncclGetUniqueId), poll()-based. Application threads hand it work through
 * these calls, under a private mutex never taken on the NCCL hot path. */
#ifndef NCG_CLIENT_H
#define NCG_CLIENT_H

#include <stdint.h>

struct ncg_comm;

/* Start this process's checker (a relay tree's root; once per process) and the thread;
 * returns the port and token for the id's tail. Application thread; binds a socket; 0 or -errno. */
int ncg_channel_listen(uint16_t *port, uint64_t *token);

/* Writes the id's tail (idtail.h: "NCGD", version, port, token, and this process's relay tree
 * when token is its root's) into a 128-byte unique id. Any thread; brief private mutex. */
void ncg_channel_write_tail(unsigned char *uid, uint16_t port, uint64_t token);

/* Track / forget a communicator. Application threads; brief private mutex; may start the
 * thread; never wait on the network. */
void ncg_channel_add(struct ncg_comm *c);
void ncg_channel_remove(struct ncg_comm *c);
/* After ncg_channel_add, from the wrapper that created c (never the per-call hot path): wakes
 * the thread to REPORT c now and waits until that REPORT is written to its link's socket, so
 * that a rank that dies right after init is a member its checker knows (RANK DIED). At most
 * 1 s, and not at all when c is unguarded, its link is down or the process is exiting; the
 * private mutex is released while waiting. Application thread; blocks; no allocation. */
void ncg_channel_announce(struct ncg_comm *c);

/* fork() child: forget the thread and connections (closes inherited sockets; no locks). */
void ncg_channel_fork_child(void);

#endif
