/*
 * peers.h - waiting for the other tasks of the cluster before training.
 *
 * Workers that start before their parameter servers exist fail their first
 * connection; the classic fix is to wait. But every task's gRPC server is
 * started by the training command itself, which the agent starts only after
 * the wait, so "wait until every peer accepts TCP" would deadlock the whole
 * job: each agent would wait for servers that only start after its own wait.
 *
 * So the default mode (TFJ_PEERS_DNS) waits until every peer's host name
 * resolves. With the operator's headless service publishing not-ready
 * addresses, a name resolves once its pod exists and has an IP, which is
 * independent of any agent: no cycle, no deadlock. TFJ_PEERS_TCP also waits
 * for a TCP connect, and is meant only for peers whose servers start without
 * waiting themselves (restricted with `types`, e.g. only "ps" when the ps
 * pods run with --peer-wait=none or dns). TFJ_PEERS_NONE skips the wait.
 *
 * Retries use jittered exponential backoff (100 ms doubling to 5 s, each
 * sleep drawn uniformly from [d/2, d]) and stop at the deadline.
 *
 * Ownership: a tfj_peers list owns its strings.
 */
#ifndef TFJ_PEERS_H
#define TFJ_PEERS_H

#include <stddef.h>

#include <tfj/tfconfig.h>

enum tfj_peers_mode { TFJ_PEERS_NONE = 0, TFJ_PEERS_DNS = 1, TFJ_PEERS_TCP = 2 };

struct tfj_peer {
	char *type;          /* task type */
	int index;
	char *host;          /* host part, brackets of an IPv6 literal removed */
	char *port;          /* decimal port */
	int resolved;        /* 1 once it resolved */
	int connected;       /* 1 once TCP connected (TCP mode) */
};

struct tfj_peers {
	struct tfj_peer *v;
	size_t n;
};

/* "none", "dns" or "tcp". */
int tfj_peers_parse_mode(enum tfj_peers_mode *out, const char *s);

/*
 * Collects every cluster address except the agent's own task (TF_CONFIG's
 * task type and index) and except duplicates of an address already listed.
 * `types` is a comma-separated list of task types to keep, or NULL for all.
 * A host without a valid ":port" is TFJ_EPARSE.
 */
int tfj_peers_collect(struct tfj_peers *out, const struct tfj_tfconfig *cfg, const char *types);

struct tfj_peers_wait_opts {
	enum tfj_peers_mode mode;
	double timeout_s;        /* overall deadline */
	double connect_timeout_s;/* one TCP connect attempt */
	int cancel_fd;           /* readable = give up (signalfd); -1 = none */
};

/*
 * Waits until every peer is ready. 0 when all are; TFJ_ETIMEOUT with a
 * detail naming the first peer still missing; TFJ_ECANCELED when cancel_fd
 * became readable (*cancel_sig gets the signal number if it is a signalfd).
 */
int tfj_peers_wait(struct tfj_peers *p, const struct tfj_peers_wait_opts *o, int *cancel_sig);

void tfj_peers_free(struct tfj_peers *p);

#endif
