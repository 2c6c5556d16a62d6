/*
 * servingcert.h - the report channel's serving certificate: kept in a
 * Secret in the operator's own namespace, made and rotated by the operator
 * (or, with `external`, by cert-manager), and served through gRPC's
 * certificate config fetcher so a new certificate takes effect without
 * restarting the server.
 *
 * Two Secrets (type kubernetes.io/tls), so the CA key sits apart from the
 * material every replica serves (and RBAC can name each):
 *   - the serving Secret (default name TFJ_SERVINGCERT_DEFAULT_SECRET):
 *       ca.crt   the CA bundle agents trust: the current CA first, during a
 *                CA rotation followed by the previous one while it is valid;
 *       tls.crt  the serving certificate, for the Service's DNS names
 *                <svc>, <svc>.<ns>, <svc>.<ns>.svc, <svc>.<ns>.svc.<domain>;
 *       tls.key  its key;
 *   - the CA Secret, self-managed only, named <serving Secret>-ca-key
 *     (tfj_servingcert_ca_secret_name): tls.crt the current CA, tls.key its
 *     key. The key never leaves it but to sign (not kept in memory).
 *
 * tfj_servingcert_sync, every replica (leader or not, since every replica
 * serves the report port), at start and every check_s:
 *   - self-managed: reads both Secrets. A ca.key in the serving Secret (the
 *     layout of earlier versions, or an earlier version's replica during an
 *     upgrade) moves to the CA Secret when it is the key of the bundle's
 *     first CA, and the serving Secret is rewritten without it. No CA
 *     Secret, or one whose CA is unusable or due (tfj_certgen_renew_due:
 *     < 1/3 of its life left) -> a new CA (CA Secret first) and certificate;
 *     a certificate that is due, does not verify for the names, or is not
 *     from the CA Secret's CA -> a new certificate from that CA. Writes are
 *     POSTs or PUTs with the read resourceVersion; a 409 means another
 *     replica wrote first: both are read again and used.
 *   - external (cert-manager): the serving Secret is only read; until it
 *     exists and verifies nothing is served. No CA Secret.
 *   - then, when the serving material changed, the certificate is checked
 *     (tfj_certgen_verify for every name, now) and becomes the served one.
 *     A Secret that does not verify is not served; the last good one stays.
 *
 * Threads: tfj_servingcert_start runs sync on a thread of its own; the
 * getters and the fetcher may be called from any thread.
 *
 * Ownership: the manager borrows the API client (one of its own in main:
 * the controller's is fenced while not leading) and copies the options.
 */
#ifndef TFJ_SERVINGCERT_H
#define TFJ_SERVINGCERT_H

#include <stddef.h>
#include <stdint.h>

#include <grpc/grpc_security.h>
#include <cjson/cJSON.h>

#include <tfj/buf.h>

#include "kube/kube.h"
#include <tfj/certgen.h>

#define TFJ_SERVINGCERT_DEFAULT_SECRET "tfjob-operator-report-tls"
#define TFJ_SERVINGCERT_CA_SUFFIX "-ca-key"
#define TFJ_SERVINGCERT_CA_LIFETIME_S (10LL * 365 * 86400)
#define TFJ_SERVINGCERT_LEAF_LIFETIME_S (90LL * 86400)
#define TFJ_SERVINGCERT_NAMES 4

struct tfj_servingcert_opts {
	const char *namespace;     /* the operator's own; required */
	const char *secret;        /* NULL = TFJ_SERVINGCERT_DEFAULT_SECRET */
	const char *service;       /* the report Service's name; required */
	const char *cluster_domain;/* NULL or "" = "cluster.local" */
	int external;              /* cert-manager writes the Secret; only read it */
	int64_t ca_lifetime_s;     /* 0 = TFJ_SERVINGCERT_CA_LIFETIME_S */
	int64_t leaf_lifetime_s;   /* 0 = TFJ_SERVINGCERT_LEAF_LIFETIME_S */
	int check_s;               /* sync period, 0 = 60 */
};

/*
 * The material of one Secret (the CA Secret's pair is tls_crt, tls_key);
 * strings malloc'd, NULL when missing.
 */
struct tfj_servingcert_pem {
	char *ca_crt, *ca_key, *tls_crt, *tls_key;
};
void tfj_servingcert_pem_free(struct tfj_servingcert_pem *p);

/* "<secret>-ca-key", the CA Secret's name (malloc'd; NULL on no memory). */
char *tfj_servingcert_ca_secret_name(const char *secret);

/* What sync does with a Secret (pure: tfj_servingcert_decide). */
enum tfj_servingcert_action {
	TFJ_SERVINGCERT_KEEP = 0,
	TFJ_SERVINGCERT_NEW_LEAF,   /* same CA, a new serving certificate */
	TFJ_SERVINGCERT_NEW_CA,     /* a new CA (and certificate) */
};

/*
 * The four DNS names of the Service into names[i] (each of cap bytes).
 * TFJ_ETOOBIG when one does not fit.
 */
int tfj_servingcert_names(char names[TFJ_SERVINGCERT_NAMES][256], const char *service,
			  const char *ns, const char *domain);

/*
 * Pure: the Service name and namespace from the address pods are given
 * (--report-service, "<svc>.<ns>[.svc[.<domain>]]:<port>"), and the cluster
 * domain when the address names one ("" else). TFJ_EINVAL for an address
 * that is not a Service's DNS name (an IP, a single label): a certificate
 * needs the name agents dial.
 */
int tfj_servingcert_service_of(char svc[64], char ns[64], char domain[128],
			       const char *hostport);

/* Pure: the action for a self-managed Secret's material at now_s. */
enum tfj_servingcert_action tfj_servingcert_decide(const struct tfj_servingcert_pem *p,
						   const char *const *names, size_t n,
						   int64_t now_s);

/* Pure: a Secret's data (base64) into *out. Missing keys stay NULL. */
int tfj_servingcert_from_secret(struct tfj_servingcert_pem *out, const cJSON *secret);
/* Pure: the Secret object for p (type kubernetes.io/tls); *out caller deletes. */
int tfj_servingcert_to_secret(cJSON **out, const struct tfj_servingcert_pem *p,
			      const char *ns, const char *name);

struct tfj_servingcert;

int tfj_servingcert_new(struct tfj_servingcert **out, struct tfj_kube *k,
			const struct tfj_servingcert_opts *o);
/* One pass (see above); 0 when a certificate is being served after it. */
int tfj_servingcert_sync(struct tfj_servingcert *s, int64_t now_s);
/* Syncs every check_s on a thread (retrying sooner while nothing is served). */
int tfj_servingcert_start(struct tfj_servingcert *s);
/* 1 once a certificate is served. */
int tfj_servingcert_ready(struct tfj_servingcert *s);
/*
 * The CA bundle agents must trust (a malloc'd copy, caller frees) and its
 * generation (changes whenever the bundle does). TFJ_EUNAVAIL before ready.
 */
int tfj_servingcert_ca(char **pem, uint64_t *gen, struct tfj_servingcert *s);
/*
 * Server credentials (TLS 1.2+, no client certificates) whose certificate
 * is fetched from s on each handshake, so a rotated Secret is served
 * without a restart. s must outlive the server. The caller owns the
 * credentials (tfj_report_opts consumes them). NULL on failure.
 */
grpc_server_credentials *tfj_servingcert_server_creds(struct tfj_servingcert *s);
/*
 * Appends tfjob_report_tls_cert_expiry_timestamp_seconds and
 * tfjob_report_tls_cert_loads_total. Accepts NULL (appends nothing).
 */
int tfj_servingcert_metrics(struct tfj_servingcert *s, struct tfj_buf *out);
/* Certificates put into service so far (metrics, tests). */
uint64_t tfj_servingcert_loads(struct tfj_servingcert *s);
/* Stops the thread and frees; accepts NULL. */
void tfj_servingcert_free(struct tfj_servingcert *s);

#endif
