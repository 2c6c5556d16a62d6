/*
 * data.h - training data: IDX files (Fashion-MNIST, MNIST), a deterministic
 * synthetic set, per-worker shards and a seeded batch iterator.
 *
 * A dataset is n examples of dim floats scaled to [0, 1] (row-major) and n
 * uint8 labels below `classes`. IDX files are read from a directory holding
 * the four standard names (train-images-idx3-ubyte, train-labels-idx1-ubyte,
 * t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte), each either plain or with
 * a .gz suffix (Debian's dataset-fashion-mnist ships them gzip'd in
 * /usr/share/datasets/fashion-mnist). Every header is validated and every
 * size is capped before anything is allocated.
 *
 * Ownership: a dataset owns x and y; tfj_data_free() releases them and
 * leaves the struct zeroed (safe to call twice). An iterator borrows its
 * dataset, which must outlive it, and owns its permutation and batch copy.
 */
#ifndef TFJ_DATA_H
#define TFJ_DATA_H

#include <stddef.h>
#include <stdint.h>

#define TFJ_DATA_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
#define TFJ_DATA_MNIST_DIR "/usr/share/datasets/mnist"
#define TFJ_IDX_MAX_FILE (64u << 20)   /* bytes of one decompressed IDX file */
#define TFJ_IDX_MAX_ITEMS 1000000u     /* first dimension */
#define TFJ_IDX_MAX_SIDE 1024u         /* rows/cols of an image */
#define TFJ_DATA_MAX_BATCH 65536u

struct tfj_dataset {
	float *x;        /* n * dim floats in [0, 1] */
	uint8_t *y;      /* n labels < classes */
	size_t n;
	size_t dim;
	size_t classes;
};

/* A parsed IDX file of unsigned bytes; data points into the parsed buffer. */
struct tfj_idx {
	unsigned ndims;      /* 1..3 */
	uint32_t dims[3];
	size_t count;        /* product of dims */
	const uint8_t *data; /* count bytes, borrowed from the input */
};

/*
 * Parses an IDX image (magic 0x00 0x00 0x08 ndims, big-endian uint32 dims,
 * then exactly count bytes). Only the unsigned-byte type is accepted; the
 * size must match the header exactly. Malformed input is TFJ_EPARSE,
 * sizes over the caps TFJ_ETOOBIG.
 */
int tfj_idx_parse(struct tfj_idx *out, const uint8_t *buf, size_t len);

/*
 * Reads one IDX file (plain or gzip'd, detected by content) into a
 * malloc'd buffer of at most TFJ_IDX_MAX_FILE bytes. Caller frees *out.
 */
int tfj_idx_read_file(uint8_t **out, size_t *len, const char *path);

/*
 * Loads the train (train != 0) or test split from `dir`; NULL means
 * $TFJOB_DATA_DIR when set, else TFJ_DATA_DEFAULT_DIR. Images and labels
 * must agree in count, labels must be < 10.
 */
int tfj_data_load(struct tfj_dataset *out, const char *dir, int train);

/*
 * Loads a dataset by name: "fashion-mnist" (dir or the default above),
 * "mnist" (dir or TFJ_DATA_MNIST_DIR), or "synthetic" (n_synth examples of
 * 784 floats, 10 classes, from `seed`; dir ignored).
 */
int tfj_data_load_named(struct tfj_dataset *out, const char *name, const char *dir,
			int train, size_t n_synth, uint64_t seed);

/*
 * A deterministic synthetic classification set: one prototype per class
 * drawn from `seed`, examples are prototypes plus noise, clipped to [0, 1].
 * The train and test splits share prototypes and differ in the noise, so a
 * model trained on one generalises to the other. Same arguments, same bytes.
 */
int tfj_data_synthetic(struct tfj_dataset *out, size_t n, size_t dim, size_t classes,
		       uint64_t seed, int train);

/*
 * Copies shard `index` of `count` (0 <= index < count) out of `in`: the
 * examples i with i % count == index, in order. Shards are disjoint, cover
 * the set, and differ in size by at most one. An empty shard is TFJ_ERANGE.
 */
int tfj_data_shard(struct tfj_dataset *out, const struct tfj_dataset *in, size_t index,
		   size_t count);

void tfj_data_free(struct tfj_dataset *ds);

/*
 * Batch iterator. Each epoch visits every example once in an order that is
 * a pure function of (seed, epoch), so every worker and every restart sees
 * the same sequence. The last batch of an epoch may be short; the next call
 * starts the next epoch.
 */
struct tfj_data_iter {
	const struct tfj_dataset *ds;
	size_t batch;
	uint64_t seed;
	uint64_t epoch;  /* epoch of the next batch */
	size_t pos;      /* position of the next batch inside the epoch */
	size_t *perm;    /* ds->n entries */
	float *xb;       /* batch * dim */
	uint8_t *yb;     /* batch */
};

int tfj_data_iter_init(struct tfj_data_iter *it, const struct tfj_dataset *ds, size_t batch,
		       uint64_t seed);

/*
 * Returns the next batch: *x and *y point into the iterator and stay valid
 * until the next call; *n is 1..batch.
 */
int tfj_data_iter_next(struct tfj_data_iter *it, const float **x, const uint8_t **y,
		       size_t *n);

/* Positions the iterator at the start of `epoch` (e.g. after a restore). */
int tfj_data_iter_seek(struct tfj_data_iter *it, uint64_t epoch, size_t pos);

void tfj_data_iter_free(struct tfj_data_iter *it);

/*
 * Writes the permutation of 0..n-1 for (seed, epoch) into perm. Exposed
 * for tests and for callers that shuffle their own arrays.
 */
void tfj_data_permutation(size_t *perm, size_t n, uint64_t seed, uint64_t epoch);

#endif
