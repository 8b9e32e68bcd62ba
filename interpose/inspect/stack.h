/* The native stack of another thread of this process, captured on demand for a verdict's
 * diagnostic: the checker thread sends the thread a real-time signal whose handler records its
 * return addresses. Best effort: any failure means "no stack", never a blocked or crashed app. */
#ifndef NCG_STACK_H
#define NCG_STACK_H

#include <stdint.h>

#define NCG_STACK_MAX 32 /* addresses recorded by the handler */

/* Captures the stack of thread tid (a thread of this process, not the caller) into pcs,
 * innermost first, without the signal-handler frames; pcs[0] is the interrupted pc + 1 so every
 * entry reads as a return address (ncg_symbolize looks up pc - 1). Returns the number of frames
 * (>= 1) or a negative errno: -EEXIST the application handles the signal, -EAGAIN the thread
 * blocks it, -ETIMEDOUT no answer within ~300 ms, -EBUSY a previous capture never finished,
 * -ENOTSUP a ThreadSanitizer build.
 * Checker thread only (one capture at a time); blocks up to ~300 ms; no allocation. */
int ncg_stack_capture(uint32_t tid, uint64_t *pcs, int max);

/* Why ncg_stack_capture returned rc < 0, in words. Any thread; static strings. */
const char *ncg_stack_strerror(int rc);

#endif
