/*
 * checkpoint.h - checkpoints: named float tensors with optional optimizer
 * state, the global step and the optimizer kind, in one checksummed file.
 *
 * Files are called <dir>/<prefix>-<step>.tfjc (prefix e.g. "model" or
 * "ps-1" when every parameter server saves its own variables). A save
 * writes <dir>/.<name>.tmp.<pid>, fsyncs it, renames it into place and
 * fsyncs the directory, so a reader sees either the old set of files or a
 * complete new one, never a torn file.
 *
 * Format (all integers little-endian; floats IEEE-754 binary32 LE):
 *   "TFJCKPT1"  u32 version=2  u32 optim_kind  i64 global_step
 *   i64 optim_steps  u32 n_vars
 *   per var: u32 name_len, name bytes, u32 rank, u64 shape[rank],
 *            u64 state_count, f32 value[prod(shape)], f32 state[state_count]
 *   u32 crc32 (zlib polynomial) of every preceding byte.
 * Version 1 files (no optim_steps) are still read, with optim_steps 0.
 *
 * Optimizer state of a variable of count elements is k blocks of count
 * floats (k = 0 sgd, 1 momentum, 2 Adam: m then v), element order as the
 * value, so it does not depend on how the variable was cut across ps
 * tasks; optim_steps is the number of updates the state has seen (Adam's
 * bias-correction t).
 * The reader checks every length against the caps below and the bytes left,
 * rejects trailing bytes, duplicate or malformed names, non-finite values
 * and a bad checksum (TFJ_EPARSE), oversize input (TFJ_ETOOBIG).
 *
 * Finding the newest file of a prefix and pruning old ones: ckptdir.h.
 *
 * Ownership: save borrows the caller's arrays. A loaded checkpoint owns
 * its vars and their arrays; tfj_ckpt_free() releases them.
 */
#ifndef TFJ_CHECKPOINT_H
#define TFJ_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_CKPT_MAX_BYTES (1ull << 30)  /* one file */
#define TFJ_CKPT_MAX_VARS 4096
#define TFJ_CKPT_NAME_MAX 128            /* including the NUL */
#define TFJ_CKPT_MAX_RANK 4
#define TFJ_CKPT_PREFIX_MAX 64
#define TFJ_CKPT_SUFFIX ".tfjc"

struct tfj_ckpt_var {
	char name[TFJ_CKPT_NAME_MAX]; /* [A-Za-z0-9_./-], non-empty */
	uint32_t rank;                /* 0..TFJ_CKPT_MAX_RANK (0 = scalar) */
	uint64_t shape[TFJ_CKPT_MAX_RANK];
	size_t count;                 /* product of shape; set by load, checked by save */
	float *value;                 /* count floats */
	size_t state_count;           /* optimizer state floats, 0 for none */
	float *state;                 /* state_count floats or NULL */
};

struct tfj_ckpt {
	int64_t global_step;  /* >= 0 */
	uint32_t optim_kind;  /* enum tfj_optim_kind the state belongs to */
	int64_t optim_steps;  /* >= 0: updates the state has seen (0 when none) */
	size_t n_vars;
	struct tfj_ckpt_var *vars;
};

/*
 * Writes ck atomically as <dir>/<prefix>-<global_step>.tfjc. The path
 * written is copied to path_out when it is not NULL (truncation is
 * TFJ_ERANGE, checked before writing). An existing file of the same step is
 * replaced.
 */
int tfj_ckpt_save(const char *dir, const char *prefix, const struct tfj_ckpt *ck,
		  char *path_out, size_t path_cap);

/* Reads and validates one file (at most TFJ_CKPT_MAX_BYTES). */
int tfj_ckpt_load(struct tfj_ckpt *out, const char *path);

/* Parses and validates an in-memory checkpoint image (the fuzzed entry). */
int tfj_ckpt_parse(struct tfj_ckpt *out, const uint8_t *buf, size_t len);

/*
 * 1 when p can name checkpoint files: [A-Za-z0-9_.-], 1 to
 * TFJ_CKPT_PREFIX_MAX - 1 characters, no slash, no leading dot.
 */
int tfj_ckpt_prefix_ok(const char *p);

/* Index of the var called name, or -1. */
int tfj_ckpt_find(const struct tfj_ckpt *ck, const char *name);

/* Frees everything a load allocated and zeroes *ck; accepts NULL. */
void tfj_ckpt_free(struct tfj_ckpt *ck);

#endif
