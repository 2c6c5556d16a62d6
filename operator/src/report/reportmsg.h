/*
 * reportmsg.h - decoding and checking one report from tfjob-agent
 * (common/proto/tfj_report.proto) into a plain, bounded struct.
 *
 * Pure: no I/O, no clock. Everything that comes off the wire passes through
 * tfj_reportmsg_decode() before any other code looks at it, so this is the
 * function the fuzz target (operator/fuzz/fuzz_report.c) exercises.
 *
 * Rules: the body is at most TFJ_REPORTMSG_MAX bytes; every request names its
 * replica in full (namespace, job name, job uid, type, index, pod); the
 * names are DNS-label-like and bounded; the type is one of chief, master,
 * worker, ps, evaluator; the index is 0..4095; numbers are finite; strings
 * are copied and cut at their buffer (the reason and message are made
 * printable). Anything else is TFJ_EINVAL (INVALID_ARGUMENT on the wire).
 *
 * Ownership: plain values, no heap; copy with `=`.
 */
#ifndef TFJ_REPORTMSG_H
#define TFJ_REPORTMSG_H

#include <stddef.h>
#include <stdint.h>
#include <tfj/progrec.h>

#define TFJ_REPORTMSG_MAX (64u * 1024u)

#define TFJ_REPORT_PATH_REGISTER "/tfj.report.v1.Report/RegisterReplica"
#define TFJ_REPORT_PATH_HEARTBEAT "/tfj.report.v1.Report/Heartbeat"
#define TFJ_REPORT_PATH_EXIT "/tfj.report.v1.Report/Exit"

enum tfj_reportmsg_kind {
	TFJ_RM_REGISTER = 0,
	TFJ_RM_HEARTBEAT,
	TFJ_RM_EXIT,
	TFJ_RM_COUNT
};

struct tfj_reportmsg_ref {
	char ns[64];
	char job[64];
	char job_uid[64];
	int type;             /* enum tfj_rtype */
	int index;
	char pod[254];
};

/* A trainer's named metric (Progress.metrics): at most TFJ_PROGREC_METRICS_MAX. */
struct tfj_reportmsg_metric {
	char name[TFJ_PROGREC_METRIC_NAME]; /* 1-63 characters [A-Za-z0-9_./-] */
	double value;         /* finite */
};

struct tfj_reportmsg {
	enum tfj_reportmsg_kind kind;
	struct tfj_reportmsg_ref ref;
	/* Heartbeat */
	int has_step, has_loss, has_accuracy, has_eps;
	int64_t step;
	double loss, accuracy, eps;
	int has_total;
	int64_t total;          /* training length in steps, >= 1 */
	struct tfj_reportmsg_metric metrics[TFJ_PROGREC_METRICS_MAX];
	unsigned nmetrics;
	int64_t progress_ms;    /* when the agent saw the record (0 = none yet) */
	int child_running;
	/* Exit */
	int exit_code;
	int retryable;
	int signal;
	char reason[64];
	char message[512];
};

/* "RegisterReplica", "Heartbeat", "Exit". */
const char *tfj_reportmsg_kind_name(enum tfj_reportmsg_kind k);

/* The kind for a method path; TFJ_ENOTFOUND for another path. */
int tfj_reportmsg_kind_of(enum tfj_reportmsg_kind *out, const char *path);

/* Unpacks and checks a request body of the given kind. */
int tfj_reportmsg_decode(struct tfj_reportmsg *out, enum tfj_reportmsg_kind kind,
			 const uint8_t *data, size_t len);

#endif
