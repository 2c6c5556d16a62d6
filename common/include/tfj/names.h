/*
 * names.h - names of the objects the operator creates.
 *
 * Pods and services for a replica are named `<job>-<type>-<index>`. The
 * result is always a valid DNS-1035 label (lowercase letters, digits and
 * '-', starting with a letter, ending with a letter or digit, at most 63
 * characters). When the plain form is not valid (too long, or a job name
 * with dots or a leading digit), the job part is sanitised and shortened and
 * a deterministic 8-hex-digit hash of the job name is added:
 * `<job-prefix>-<hash>-<type>-<index>`. Same input, same name, always.
 */
#ifndef TFJ_NAMES_H
#define TFJ_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_NAMES_LABEL_MAX 63
/* Longest host string tfj_names_host() produces, NUL excluded. */
#define TFJ_NAMES_HOST_MAX 320

/* 1 if s is a valid DNS-1035 label of at most 63 characters. */
int tfj_names_is_dns1035(const char *s);

/*
 * 1 if the n bytes at s are a DNS-1123 label (a namespace name): 1 to 63
 * lowercase letters, digits and '-', starting and ending with a letter or
 * digit. s need not be NUL-terminated.
 */
int tfj_names_is_dns1123_label(const char *s, size_t n);

/*
 * Writes the replica name into out (outlen >= 64). `type` is the replica
 * type in any case ("Worker" and "worker" give the same name); index >= 0.
 */
int tfj_names_replica(char *out, size_t outlen, const char *job, const char *type, int index);

/*
 * Writes `<replica>.<namespace>.svc[.<domain>]:<port>` into out
 * (outlen > TFJ_NAMES_HOST_MAX). `domain` may be NULL or "" for the short
 * form the reference operator uses.
 */
int tfj_names_host(char *out, size_t outlen, const char *job, const char *type, int index,
		   const char *ns, const char *domain, int port);

/* The 32-bit FNV-1a hash the suffix is built from (exposed for tests). */
uint32_t tfj_names_hash(const char *s);

#endif
