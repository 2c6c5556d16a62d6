/*
 * reporter.h - the agent's client of the operator's report channel.
 *
 * A gRPC (core C API) client of tfj.report.v1.Report (common/proto/
 * tfj_report.proto): RegisterReplica once, Heartbeat periodically with the latest
 * progress, Exit at the end. Each call
 *  - carries `authorization: Bearer <token>`, the token re-read from the
 *    projected service-account token file on every call (kubelet rotates
 *    it); the token is never logged and is wiped from memory after use;
 *  - has a short deadline and no wait-for-ready, so a channel that is down
 *    fails fast;
 *  - is best effort: failures are logged (rate-limited) and never change
 *    the agent's exit code.
 * Messages are capped at TFJ_REPORTER_MAX_MSG in both directions.
 *
 * Without a CA file the channel is plaintext (in-cluster, pod network);
 * with one (TFJOB_REPORT_CA_FILE) it is TLS with the server verified.
 *
 * A background thread (tfj_reporter_start) does the calls so the supervisor
 * loop never blocks on the network; tfj_reporter_update() hands it the
 * latest progress and tfj_reporter_finish() sends Exit and joins it, bounded
 * by the call deadline.
 *
 * Acks: the operator's replies say what it holds durably (in the TFJob
 * status): the newest progress record and the Exit. finish() resends the
 * final record, then the Exit, until acked, refused for good (the job is
 * finished or gone, the caller is not authorized) or ack_wait_s passed, so
 * the final step and "training done" survive an operator that restarts
 * right then. During training, heartbeats repeat the latest record anyway.
 *
 * After an UNAVAILABLE answer or a timeout the next call opens a new
 * channel (its own subchannel pool, so a new connection): behind the
 * operator's Service a standby replica answers UNAVAILABLE for good on its
 * connection, a connection to a pod that vanished without closing it times
 * out for good, and only a new one can reach the leader.
 *
 * Ownership: struct tfj_reporter copies every string it is given.
 */
#ifndef TFJ_REPORTER_H
#define TFJ_REPORTER_H

#include <stddef.h>
#include <stdint.h>

#include "progress.h"

#define TFJ_REPORTER_MAX_MSG (64 * 1024)
#define TFJ_REPORTER_TOKEN_MAX (16 * 1024)
#define TFJ_REPORTER_TOKEN_DEFAULT "/var/run/secrets/tfjob/token"
#define TFJ_REPORTER_AGENT_VERSION "0.1.0"

#define TFJ_REPORTER_METHOD_REGISTER "/tfj.report.v1.Report/RegisterReplica"
#define TFJ_REPORTER_METHOD_HEARTBEAT "/tfj.report.v1.Report/Heartbeat"
#define TFJ_REPORTER_METHOD_EXIT "/tfj.report.v1.Report/Exit"

struct tfj_reporter_ident {
	const char *namespace_;
	const char *job_name;
	const char *job_uid;
	const char *replica_type;
	int replica_index;
	const char *pod_name;
};

struct tfj_reporter_opts {
	const char *addr;         /* host:port of the operator's report service */
	const char *token_file;   /* NULL = TFJ_REPORTER_TOKEN_DEFAULT */
	const char *ca_file;      /* PEM roots; NULL = plaintext */
	double timeout_s;         /* deadline of one call */
	double heartbeat_s;       /* heartbeat period */
	double ack_wait_s;        /* finish: resend the final records until acked, at
				   * most this long; <= 0: send them once */
};

struct tfj_reporter_exit {
	int exit_code;
	const char *reason;
	int has_last_step;
	int64_t last_step;
	const char *message;
	int signal;
};

struct tfj_reporter;

/* Creates the channel (connects lazily). TFJ_EINVAL on a bad address. */
int tfj_reporter_open(struct tfj_reporter **out, const struct tfj_reporter_opts *o,
		      const struct tfj_reporter_ident *id);

/* Synchronous calls; 0 on an OK status, TFJ_EUNAVAIL/TFJ_ETIMEOUT/TFJ_EAUTH... else. */
int tfj_reporter_register(struct tfj_reporter *r, uint32_t *heartbeat_s);
int tfj_reporter_heartbeat(struct tfj_reporter *r, const struct tfj_progress_state *p,
			   int child_running);
int tfj_reporter_exit(struct tfj_reporter *r, const struct tfj_reporter_exit *e);

/* Background sender: registers, then heartbeats every heartbeat_s. */
int tfj_reporter_start(struct tfj_reporter *r);
void tfj_reporter_update(struct tfj_reporter *r, const struct tfj_progress_state *p,
			 int child_running);
/* Stops the thread, sends Exit once (bounded) and joins. Safe without start. */
void tfj_reporter_finish(struct tfj_reporter *r, const struct tfj_reporter_exit *e);
/*
 * The agent is being terminated (SIGTERM from kubelet): its grace period is
 * the bound, so finish sends the final records once instead of waiting for
 * acks. Accepts NULL.
 */
void tfj_reporter_no_ack_wait(struct tfj_reporter *r);

/*
 * The operator's stop (HeartbeatResponse.stop: the job has succeeded and
 * this replica would never end on its own). Once a heartbeat reply asked
 * for it, tfj_reporter_stop_fd() becomes readable (an eventfd, owned by
 * the reporter, valid until close; -1 when it could not be made) and
 * tfj_reporter_stop_requested() returns 1 with the operator's reason.
 */
int tfj_reporter_stop_fd(struct tfj_reporter *r);
int tfj_reporter_stop_requested(struct tfj_reporter *r, char *reason, size_t reason_len);

/* Counters for logs and tests. */
struct tfj_reporter_stats {
	uint64_t calls_ok;
	uint64_t calls_failed;
	int registered;
	int64_t acked_progress_ms;  /* last Heartbeat reply's ack (agent time of a record) */
	int exit_acked;             /* last Exit reply acked it */
	uint64_t resends;           /* final records sent again for want of an ack */
	uint64_t reconnects;        /* new channels after UNAVAILABLE (a standby replica) */
};
void tfj_reporter_get_stats(struct tfj_reporter *r, struct tfj_reporter_stats *out);

/* Closes the channel; accepts NULL. Call after finish. */
void tfj_reporter_close(struct tfj_reporter *r);

#endif
