/*
 * pstls.h - TLS for the ps traffic: the ps serves TLS with the job's
 * certificate, every client verifies it; the bearer secret (psauth.h) and
 * the tensors travel inside (docs/security.md, "Training traffic").
 *
 * The operator puts the job's certificate into the job's ps Secret and
 * names its mount with TFJOB_PS_TLS_DIR (operator/src/tfjob/pssecret.h):
 * `ca.crt`, a CA made for this job alone, and `tls.crt`/`tls.key`, the ps
 * serving certificate it signed for the ps hosts of TF_CONFIG. A ps loads
 * tls.crt and tls.key; a worker, chief or evaluator loads ca.crt and gRPC
 * checks the ps's certificate against it and the host it dials.
 *
 * Secure by default: without TFJOB_PS_TLS_DIR the runtime refuses to start
 * (a TFJob from an older operator, whose Secret has no certificate, fails
 * the same way, naming the missing file), unless TFJOB_PS_TLS=off says to
 * run in clear, which the ps and every client then log as a warning.
 * TFJOB_PS_TLS=off wins over TFJOB_PS_TLS_DIR. `tfjob-runtime launch`
 * makes a throwaway CA for its local cluster (tfj_pstls_local) when neither
 * is set, so a local run is encrypted too.
 *
 * TFJOB_PS_TLS_SERVER_NAME (clients only) names the host the ps's
 * certificate is checked for when the address dialled is not one of its
 * names, e.g. a ps reached by its pod IP from outside the cluster; the
 * certificate must still chain to ca.crt.
 *
 * Ownership: a struct tfj_pstls owns its PEM strings (the key wiped on
 * free).
 */
#ifndef TFJ_PSTLS_H
#define TFJ_PSTLS_H

#include <stddef.h>

#include <grpc/grpc_security.h>

#define TFJ_PSTLS_DIR_ENV "TFJOB_PS_TLS_DIR"
#define TFJ_PSTLS_MODE_ENV "TFJOB_PS_TLS"
#define TFJ_PSTLS_NAME_ENV "TFJOB_PS_TLS_SERVER_NAME"
#define TFJ_PSTLS_CA_FILE "ca.crt"
#define TFJ_PSTLS_CERT_FILE "tls.crt"
#define TFJ_PSTLS_KEY_FILE "tls.key"
/* One PEM file, at most: a certificate with eight long names is ~4 KiB. */
#define TFJ_PSTLS_PEM_MAX (64u << 10)

struct tfj_pstls {
	int on;          /* 0: plaintext, by TFJOB_PS_TLS=off */
	char *ca_pem;    /* a client's roots */
	char *cert_pem;  /* the ps's certificate */
	char *key_pem;   /* the ps's key (wiped on free) */
	char *server_name; /* a client's TFJOB_PS_TLS_SERVER_NAME, or NULL */
};

/*
 * Loads what a ps (server 1) or a client (server 0) needs from `dir`;
 * `mode` is TFJOB_PS_TLS's value (NULL, "" or "on": TLS; "off": plaintext).
 * TFJ_EINVAL for another mode, no dir with TLS on, or a key that is not
 * the certificate's; the errors of tfj_file_read for a missing or
 * oversized file. The detail says what to do.
 */
int tfj_pstls_load(struct tfj_pstls *t, const char *dir, const char *mode, int server);
/* tfj_pstls_load with the environment's TFJOB_PS_TLS_DIR and TFJOB_PS_TLS; logs the mode. */
int tfj_pstls_from_env(struct tfj_pstls *t, int server);
void tfj_pstls_free(struct tfj_pstls *t);

/* The ps's server credentials (no client certificate asked); NULL when off or on failure. */
grpc_server_credentials *tfj_pstls_server_creds(const struct tfj_pstls *t);

/*
 * A throwaway CA and a ps certificate for 127.0.0.1 and localhost, written
 * as ca.crt, tls.crt and tls.key (mode 0600) into a new directory made from
 * `templ` (a mkdtemp template, "/tmp/tfjob-tls-XXXXXX", rewritten in
 * place). The CA's key is never written.
 */
int tfj_pstls_local(char *templ);
/* Removes what tfj_pstls_local made in dir. */
void tfj_pstls_local_remove(const char *dir);

#endif
