/*
 * parse.h - numbers, durations, booleans and host:port from flags,
 * environment variables and TF_CONFIG hosts.
 *
 * One set of rules for every binary, so that `--peer-timeout 30` means
 * the same to the agent and the runtime:
 * - The whole string is the value: empty input, trailing garbage ("12abc"),
 *   overflow and out-of-range values are errors. strtol-style leading
 *   whitespace is tolerated, as it always was.
 * - Integers are decimal. An unsigned value refuses a minus sign instead of
 *   wrapping around ("-1" is not 18446744073709551615).
 * - Floating-point values must be finite (no "nan", no "inf").
 * - A duration is a number of seconds, fractions allowed ("0.5"); no unit
 *   suffix, which is what every CLI has accepted so far.
 * - A boolean is true/1/yes or false/0/no (lower case).
 *
 * Every function returns 0 or TFJ_EINVAL (TFJ_ERANGE never escapes: a
 * value out of range is a bad argument) with a detail that starts with
 * `what` (the flag or variable name, e.g. "--workers") and quotes the value.
 * *out is written only on success.
 *
 * Ownership: nothing is allocated; host:port writes into the caller's
 * buffer.
 */
#ifndef TFJ_PARSE_H
#define TFJ_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* Signed decimal integer in [min, max]. */
int tfj_parse_i64(int64_t *out, const char *s, int64_t min, int64_t max, const char *what);

/* Unsigned decimal integer in [min, max]; a '-' sign is refused. */
int tfj_parse_u64(uint64_t *out, const char *s, uint64_t min, uint64_t max, const char *what);

/* tfj_parse_i64 for an int in [min, max]. */
int tfj_parse_int(int *out, const char *s, int min, int max, const char *what);

/* Finite floating-point number in [min, max]. */
int tfj_parse_double(double *out, const char *s, double min, double max, const char *what);

/* A duration in seconds in [min, max] (see above for the accepted forms). */
int tfj_parse_seconds(double *out, const char *s, double min, double max, const char *what);

/* true/1/yes -> 1, false/0/no -> 0. NULL (a flag given without a value) is true. */
int tfj_parse_bool(int *out, const char *s, const char *what);

/* Forms tfj_parse_hostport() accepts beyond "host:port" and "[v6]:port". */
#define TFJ_HOSTPORT_EMPTY_HOST 1u  /* ":8080": the host may be empty */
#define TFJ_HOSTPORT_BARE_PORT  2u  /* "8080": no colon at all, host "" */
#define TFJ_HOSTPORT_PORT_ZERO  4u  /* port 0 (let the kernel pick) */
#define TFJ_HOSTPORT_NUMERIC    8u  /* the host, if any, is a numeric IPv4/IPv6 address */
/*
 * A listen address as every server flag takes it (--metrics-addr,
 * --report-addr): ":8080" and "8080" mean every interface, port 0 lets the
 * kernel pick, and a host must be numeric so that binding never waits on DNS.
 */
#define TFJ_HOSTPORT_LISTEN \
	(TFJ_HOSTPORT_EMPTY_HOST | TFJ_HOSTPORT_BARE_PORT | TFJ_HOSTPORT_PORT_ZERO | \
	 TFJ_HOSTPORT_NUMERIC)

/*
 * Splits "host:port", "[v6addr]:port" or an unbracketed "v6::addr:port"
 * (the last colon separates the port). The host is copied into
 * host[hostcap] without brackets; the port is 1-65535 (0-65535 with
 * TFJ_HOSTPORT_PORT_ZERO). An empty host, a missing port, a '[' without
 * "]:" and a host longer than hostcap - 1 are errors unless `flags` allow
 * them. host and port are written only on success.
 */
int tfj_parse_hostport(char *host, size_t hostcap, int *port, const char *s, unsigned flags,
		       const char *what);

/*
 * Whether the flag name name[0..n) (without the leading "--") is `want`,
 * counting '-' and '_' as the same character. Flags are spelled with dashes
 * (--peer-timeout) in every binary; the runtime also takes the underscore
 * spelling of TensorFlow scripts (--peer_timeout) through this comparison.
 */
int tfj_parse_flag_eq(const char *name, size_t n, const char *want);

#endif
