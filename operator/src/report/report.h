/*
 * report.h - the operator's report service (gRPC core, completion queues):
 * /tfj.report.v1.Report/{RegisterReplica,Heartbeat,Exit} from tfjob-agent.
 *
 * Per call, in order:
 *   1. gRPC itself refuses bodies over TFJ_REPORTMSG_MAX (RESOURCE_EXHAUSTED);
 *   2. tfj_reportmsg_decode (INVALID_ARGUMENT);
 *   3. the bearer token from `authorization` metadata and the `auth`
 *      callback (TokenReview + pod check: UNAUTHENTICATED/PERMISSION_DENIED);
 *   4. a per-pod token bucket (RESOURCE_EXHAUSTED, reason rate_limited);
 * and, before 3., per peer address, a token bucket that only refused calls
 * (invalid argument, unauthenticated, permission denied, and unavailable
 * with reason review_limited: the TokenReview budget was spent) drain: an address
 * that keeps failing is answered RESOURCE_EXHAUSTED (reason peer_limited)
 * before its token is looked at (peerlimit.h), unless the optional `known`
 * callback says the token is one already verified.
 *   5. the `deliver` callback (FAILED_PRECONDITION for a finished job);
 *   6. for an accepted Heartbeat, the optional `advise` callback fills its
 *      reply (`stop`, docs/operator.md "Stopping after success").
 * Every refusal is counted in tfjob_report_rejected_total{reason}. The token
 * is never logged; log lines name the claimed pod only.
 *
 * Threads: `threads` server threads (default 4), each with its own
 * completion queue, handle calls one at a time; callbacks run on them and
 * may block (a TokenReview), which is why there is more than one.
 *
 * Ownership: the server copies its options' strings; callbacks' arguments
 * are valid only during the call.
 */
#ifndef TFJ_REPORT_H
#define TFJ_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <tfj/buf.h>
#include <tfj/grpc.h>

#include "report/reportmsg.h"

/* The answer of a callback; mapped onto the gRPC status code. */
enum tfj_report_code {
	TFJ_REPORT_OK = 0,
	TFJ_REPORT_UNAUTHENTICATED,
	TFJ_REPORT_PERMISSION_DENIED,
	TFJ_REPORT_FAILED_PRECONDITION,
	TFJ_REPORT_NOT_FOUND,
	TFJ_REPORT_UNAVAILABLE
};

/*
 * Both callbacks set *reason to a static metrics label when they refuse
 * (e.g. "invalid_token", "job_finished"). `token` is "" when the call had
 * none.
 */
/*
 * auth: on success writes the verified caller (the pod's uid) into
 * subject[subject_len]; it keys the per-pod rate limit and is passed on.
 */
#define TFJ_REPORT_SUBJECT_MAX 64
typedef enum tfj_report_code (*tfj_report_auth_fn)(void *ud, const struct tfj_reportmsg *m,
						   const char *token, char *subject,
						   size_t subject_len, const char **reason);
typedef enum tfj_report_code (*tfj_report_deliver_fn)(void *ud, const struct tfj_reportmsg *m,
						      const char *subject, const char **reason);

/*
 * advise (optional): for an accepted Heartbeat, what its reply tells the
 * agent. Called after `deliver` said OK; *stop = 1 asks the agent to end
 * its command and exit 0, with a short human reason (copied).
 *
 * ack (optional): after an accepted Heartbeat or Exit, what of this pod's
 * reports the operator holds durably (report/progress.h); the reply carries
 * it, and agents resend their last records until it covers them. Without
 * the callback nothing is acked.
 */
#define TFJ_REPORT_STOP_REASON_MAX 128
typedef void (*tfj_report_advise_fn)(void *ud, const struct tfj_reportmsg *m, int *stop,
				     char *reason, size_t reason_len);
struct tfj_report_ack {
	int64_t progress_ms;   /* agent time of the newest durable progress record; 0 = none */
	int exit;              /* the pod's Exit is durable */
};
typedef void (*tfj_report_ack_fn)(void *ud, const struct tfj_reportmsg *m, const char *subject,
				  struct tfj_report_ack *out);

/* known (optional): 1 when `token` was verified a moment ago (a cache hit, no I/O). */
typedef int (*tfj_report_known_fn)(void *ud, const char *token);

/*
 * The connection bounds' defaults. An agent finishes its handshake in
 * milliseconds and calls at least once per heartbeat (10 s by default,
 * docs/agent.md), so neither timeout touches a live agent; a channel the
 * server closed is reopened by the agent's next call. The quota is what
 * the report port may hold in connection buffers: about 500 idle TLS connections (gRPC counts some 30 KiB of each; the
 * process holds about 140 KiB resident per connection, docs/operator.md
 * "Report channel"), well inside the chart's memory limit. More agents
 * than that still report: the quota closes connections without a call,
 * and an agent reconnects on its next heartbeat.
 */
#define TFJ_REPORT_HANDSHAKE_MS 10000
#define TFJ_REPORT_IDLE_MS (5 * 60 * 1000)
#define TFJ_REPORT_QUOTA_BYTES ((size_t)16 << 20)

struct tfj_report_opts {
	const char *addr;            /* "host:port" to listen on (port 0: any) */
	tfj_report_auth_fn auth;     /* required */
	tfj_report_deliver_fn deliver; /* required */
	tfj_report_advise_fn advise;   /* optional: Heartbeat replies say nothing without it */
	tfj_report_ack_fn ack;       /* optional */
	tfj_report_known_fn known;   /* optional: verified tokens pass a peer's limit */
	void *ud;
	int threads;                 /* 1..16, default 4 */
	double pod_qps;              /* per-pod report rate, default 2/s */
	int pod_burst;               /* default 10 */
	double peer_qps;             /* failed calls per peer address, default 1/s */
	int peer_burst;              /* default 20 */
	uint32_t heartbeat_s;        /* asked of agents in RegisterReplica; 0 = theirs */
	/*
	 * Connection bounds (0 = the defaults below). A connection that has
	 * not finished its TLS handshake after handshake_timeout_ms, or has
	 * carried no call for idle_timeout_ms, is closed; every connection's
	 * buffers come out of one memory quota of quota_bytes, and under its
	 * pressure gRPC closes connections without calls first.
	 */
	int handshake_timeout_ms;    /* default TFJ_REPORT_HANDSHAKE_MS */
	int idle_timeout_ms;         /* default TFJ_REPORT_IDLE_MS */
	size_t quota_bytes;          /* default TFJ_REPORT_QUOTA_BYTES */
	/*
	 * TLS (report/servingcert.h's tfj_servingcert_server_creds); consumed
	 * by tfj_report_start, also when it fails. NULL = plaintext, which
	 * only --report-insecure and tests ask for.
	 */
	grpc_server_credentials *creds;
};

struct tfj_report;

/* Binds and starts the threads; TFJ_EIO when the address cannot be bound. */
int tfj_report_start(struct tfj_report **out, const struct tfj_report_opts *o);
/* The port actually bound. */
int tfj_report_port(const struct tfj_report *s);
/* Stops, cancels calls in flight and frees. Accepts NULL. */
void tfj_report_stop(struct tfj_report *s);

/* Appends tfjob_report_requests_total and tfjob_report_rejected_total. */
int tfj_report_metrics(struct tfj_report *s, struct tfj_buf *out);
/* Rejections counted so far for one reason label (tests). */
uint64_t tfj_report_rejected(struct tfj_report *s, const char *reason);

#endif
