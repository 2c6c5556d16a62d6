/*
 * stop.h - the runtime's one stop request: a signal (SIGTERM, SIGINT) asks
 * every loop of the task to stop, whichever role it plays.
 *
 * cli.c's signal handler sets it; the ps's serving loop, the trainer, the
 * session's retries, the local launcher and the training loop read it. It
 * is its own module so that none of them depends on another's module for
 * it.
 *
 * Ownership: one process-wide flag, no memory.
 */
#ifndef TFJ_STOP_H
#define TFJ_STOP_H

/* Asks every loop to stop. Async-signal-safe (one store to a sig_atomic_t). */
void tfj_stop_request(void);

/* 1 once a stop was asked for, else 0. */
int tfj_stop_requested(void);

#endif
