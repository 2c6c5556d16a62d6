/*
 * kubeconfig.h - where the API server is and how to authenticate to it.
 *
 * Two sources: a kubeconfig file (the current context's cluster and user),
 * or the in-cluster service account (token and CA mounted by the kubelet,
 * server address from KUBERNETES_SERVICE_HOST/PORT). Everything that is read
 * is bounded: files larger than TFJ_KUBECONFIG_MAX_FILE are refused.
 *
 * TLS is always verified: a kubeconfig asking for insecure-skip-tls-verify
 * is rejected with TFJ_EUNSUPP rather than silently honoured. Only the
 * credentials the operator can use are read (client certificate, bearer
 * token, token file); exec and auth-provider plugins are rejected.
 *
 * Ownership: struct tfj_kubeconfig owns all its strings and blobs;
 * tfj_kubeconfig_free() releases them and accepts NULL.
 */
#ifndef TFJ_KUBECONFIG_H
#define TFJ_KUBECONFIG_H

#include <stddef.h>

#define TFJ_KUBECONFIG_MAX_FILE   (1u << 20)  /* a kubeconfig file */
#define TFJ_KUBECONFIG_MAX_BLOB   (256u << 10) /* a certificate, key or token */
#define TFJ_KUBECONFIG_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

struct tfj_kubeconfig {
	char *server;          /* "https://host:port", no trailing slash */
	char *ca_file;         /* PEM file path, or NULL */
	char *ca_data;         /* PEM bytes (decoded), or NULL */
	size_t ca_len;
	char *cert_file;       /* client certificate path, or NULL */
	char *cert_data;       /* client certificate PEM, or NULL */
	size_t cert_len;
	char *key_file;        /* client key path, or NULL */
	char *key_data;        /* client key PEM, or NULL */
	size_t key_len;
	char *token;           /* static bearer token, or NULL */
	char *token_file;      /* bearer token re-read from this file, or NULL */
	char *namespace;       /* the context's (or service account's) namespace, or NULL */
	int in_cluster;        /* 1 when built from the service account */
};

/*
 * Parses kubeconfig YAML of `len` bytes. Relative file paths are resolved
 * against `basedir` (the directory of the file; NULL means the current
 * directory). Errors: TFJ_EPARSE (not YAML, wrong shape), TFJ_ENOTFOUND (no
 * current-context, or it names a missing context/cluster/user), TFJ_EINVAL
 * (bad server URL, bad base64), TFJ_EUNSUPP (insecure TLS, exec plugins).
 */
int tfj_kubeconfig_parse(struct tfj_kubeconfig *out, const char *text, size_t len,
			 const char *basedir);

/* Reads and parses a kubeconfig file. */
int tfj_kubeconfig_load_file(struct tfj_kubeconfig *out, const char *path);

/*
 * The in-cluster configuration: sa_dir (NULL = TFJ_KUBECONFIG_SA_DIR) holds
 * `token`, `ca.crt` and `namespace`; the server comes from the environment.
 * TFJ_ENOTFOUND when not running in a cluster.
 */
int tfj_kubeconfig_in_cluster(struct tfj_kubeconfig *out, const char *sa_dir);

/*
 * The usual search order: `path` if given, else $KUBECONFIG (first entry),
 * else in-cluster, else ~/.kube/config.
 */
int tfj_kubeconfig_load_default(struct tfj_kubeconfig *out, const char *path);

/* Releases everything cfg owns and zeroes it. Accepts NULL. */
void tfj_kubeconfig_free(struct tfj_kubeconfig *cfg);

#endif
