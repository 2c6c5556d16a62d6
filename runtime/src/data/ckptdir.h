/*
 * ckptdir.h - the checkpoint files of a directory: the newest one of a
 * prefix, and pruning all but the newest few.
 *
 * Files are named <prefix>-<step>.tfjc (checkpoint.h), the step in decimal
 * with no leading zeros, at most 18 digits; temporary files
 * (.<name>.tmp.<pid>) and anything else are ignored. Neither function reads
 * a checkpoint's contents: a file that turns out corrupt is the loader's
 * to refuse.
 *
 * Ownership: nothing is kept between calls.
 */
#ifndef TFJ_CKPTDIR_H
#define TFJ_CKPTDIR_H

#include <stddef.h>
#include <stdint.h>

/*
 * Finds the checkpoint with the highest step for `prefix` in dir and
 * copies its path to path_out; *step_out gets the step. No checkpoint (or
 * no directory) is TFJ_ENOTFOUND; a path that does not fit is TFJ_ERANGE.
 */
int tfj_ckptdir_latest(char *path_out, size_t path_cap, int64_t *step_out, const char *dir,
		       const char *prefix);

/*
 * Removes all but the `keep` (>= 1) newest checkpoints of `prefix`. At
 * most 100,000 matching files are considered (TFJ_ETOOBIG beyond).
 */
int tfj_ckptdir_prune(const char *dir, const char *prefix, size_t keep);

#endif
