/*
 * loadgen.h - the client side of tfj-bench-reportload (reportload.c): valid
 * Heartbeats, each token once per period, from a pool of client channels to
 * 127.0.0.1, and forgers sending tokens signed by a key of their own under
 * the real kid to ::1 (or to 127.0.0.1 as well, shared_peer); latency
 * measured around each call.
 *
 * Runs in the child process: reads "P <port>", then "T <job> <job-uid>
 * <index> <token>" per token and "E" from `in`; writes "S" to `out` when
 * the warm-up ends and, at the end, one JSON object (one line) of counts
 * and latencies. Owns nothing of the caller's; closes neither stream.
 */
#ifndef TFJ_BENCH_LOADGEN_H
#define TFJ_BENCH_LOADGEN_H

#include <stdio.h>

struct tfj_loadgen_opts {
	int tokens;        /* valid tokens expected on `in` */
	int period_s;      /* each token reports once per period */
	int forgers;       /* forged-token senders */
	double forger_qps; /* calls per second of each */
	int seconds;       /* the whole run, warm-up included */
	int warmup_s;      /* not counted in the latencies */
	int threads;       /* client threads (and channels) for the valid reports */
	int shared_peer;   /* 1: the forgers call 127.0.0.1 too, the agents' address */
};

/* Returns the child's exit code: 0 when the run took place. */
int tfj_loadgen_run(const struct tfj_loadgen_opts *o, FILE *in, FILE *out);

#endif
