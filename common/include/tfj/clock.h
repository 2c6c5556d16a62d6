/*
 * clock.h - timed waits that a wall-clock step cannot stretch, and wall
 * time for the records that need it.
 *
 * pthread_cond_timedwait() measures its deadline on the condition
 * variable's clock, CLOCK_REALTIME unless told otherwise, so a clock set
 * back by an hour (NTP, a VM resumed from a snapshot) would make a 2 s
 * wait last an hour: a leader that stops renewing its Lease, a work queue
 * that stops retrying. Condition variables made by tfj_clock_cond_init()
 * use CLOCK_MONOTONIC instead, and tfj_clock_deadline() computes deadlines
 * on that clock. Use the pair together; a deadline for one clock is
 * meaningless on the other.
 *
 * Ownership: nothing is allocated; the caller destroys the condition
 * variable with pthread_cond_destroy().
 */
#ifndef TFJ_CLOCK_H
#define TFJ_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* pthread_cond_init() with CLOCK_MONOTONIC; 0 or the pthread error. */
int tfj_clock_cond_init(pthread_cond_t *cv);

/* *ts = CLOCK_MONOTONIC now + delay_ms, for a tfj_clock_cond_init() variable. */
void tfj_clock_deadline(struct timespec *ts, uint64_t delay_ms);

/* Monotonic nanoseconds since an arbitrary start. */
uint64_t tfj_clock_mono_ns(void);

/* Wall-clock milliseconds since the Unix epoch (timestamps in records). */
int64_t tfj_clock_unix_ms(void);

#endif
