/*
 * file.h - bounded whole-file reads, and secrets (token files) read so
 * that no copy is left behind.
 *
 * Every binary reads small files whole: a kubeconfig, a CA bundle, a
 * checkpoint, a service-account token. They all go through one reader that
 * reads to EOF (a pipe or a file that changes while it is read is fine)
 * and fails with TFJ_ETOOBIG as soon as the file holds more than `max`
 * bytes, instead of trusting st_size or growing without end.
 *
 * Errors: TFJ_ENOTFOUND when the path does not exist, TFJ_EINVAL for a
 * non-regular file under TFJ_FILE_REGULAR, TFJ_ETOOBIG past `max`,
 * TFJ_ENOMEM, TFJ_EIO for any other open or read failure. The detail names
 * the path.
 *
 * Ownership: *out is malloc'd and NUL-terminated (*len excludes the NUL);
 * the caller frees it with free(), or with tfj_file_secret_free() when it
 * came from tfj_file_read_secret().
 */
#ifndef TFJ_FILE_H
#define TFJ_FILE_H

#include <stddef.h>

/* Refuse anything but a regular file (a FIFO or device could block forever). */
#define TFJ_FILE_REGULAR 1u

/* Reads all of `path`, at most `max` bytes. flags: 0 or TFJ_FILE_REGULAR. */
int tfj_file_read(char **out, size_t *len, const char *path, size_t max, unsigned flags);

/*
 * Reads a secret such as a bearer token. The one trim rule for tokens:
 * trailing ASCII whitespace (space, tab, CR, LF) is removed, because
 * editors and `echo` add a newline and Kubernetes' projected token files
 * have none; nothing else is changed (a token's content is the issuer's
 * business, the caller checks what it needs). Every buffer that held the
 * bytes is wiped before it is freed, on success and on error, so the
 * secret stays only in *out. *out may be empty ("" with *len 0).
 */
int tfj_file_read_secret(char **out, size_t *len, const char *path, size_t max);

/* Wipes a NUL-terminated secret (up to its NUL) and frees it. Accepts NULL. */
void tfj_file_secret_free(char *s);

#endif
