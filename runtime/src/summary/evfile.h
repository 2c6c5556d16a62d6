/*
 * evfile.h - TensorBoard's record framing (the TFRecord format) and an
 * append-only file of such records.
 *
 * One record on disk is
 *   uint64 length (little-endian) | uint32 masked CRC32C of those 8 bytes |
 *   data (length bytes)           | uint32 masked CRC32C of the data
 * where CRC32C is the Castagnoli CRC (iSCSI, RFC 3720) and the mask is
 * TensorFlow's: rotate right by 15 bits, add 0xa282ead8. Readers check both
 * CRCs, and stop at a record whose bytes are not all there yet.
 *
 * Every record reaches the kernel with one write(2) before append returns,
 * so a writer that is killed (SIGKILL included) leaves whole records; only
 * a failed or short write (a full volume) or a machine crash can leave one
 * partial record at the end, which readers treat as "not written yet".
 *
 * Ownership: tfj_evfile_open() returns a writer that tfj_evfile_close()
 * closes and frees (it accepts NULL). The writer does not keep `data`.
 */
#ifndef TFJ_EVFILE_H
#define TFJ_EVFILE_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_EVFILE_HEADER 12u           /* length + its CRC */
#define TFJ_EVFILE_FOOTER 4u            /* the data's CRC */
#define TFJ_EVFILE_MAX_DATA (64u << 10) /* the largest record this writer makes */

/* CRC32C of n bytes continuing from `crc` (0 to start). */
uint32_t tfj_evfile_crc32c(uint32_t crc, const void *p, size_t n);

/* TensorFlow's masked form of a CRC, the one stored in records. */
uint32_t tfj_evfile_mask(uint32_t crc);

/*
 * Frames `n` bytes of data (n <= TFJ_EVFILE_MAX_DATA) into out, which has
 * room for `cap` bytes; *len receives n + header + footer. TFJ_ETOOBIG when
 * n or the frame does not fit.
 */
int tfj_evfile_frame(uint8_t *out, size_t cap, size_t *len, const void *data, size_t n);

struct tfj_evfile;

/*
 * Creates `path` (mode 0644; TFJ_EEXIST when it exists: an event file is
 * never appended to by a second writer) for appending records.
 */
int tfj_evfile_open(struct tfj_evfile **out, const char *path);

/* Appends one record and hands it to the kernel before returning. */
int tfj_evfile_append(struct tfj_evfile *f, const void *data, size_t n);

/* Records appended so far. */
uint64_t tfj_evfile_records(const struct tfj_evfile *f);

/* Closes and frees; accepts NULL. */
void tfj_evfile_close(struct tfj_evfile *f);

#endif
