"""Shared by the two test programs: Fashion-MNIST from Debian's
dataset-fashion-mnist files, a small MLP as plain tf.Variables (no Keras
model: model.fit does not run under ParameterServerStrategy or
MultiWorkerMirroredStrategy in TF 2.21, and plain variables behave the same
under both), and the final TFJ_PROGRESS record."""
import gzip
import json
import os
import sys

import numpy as np
import tensorflow as tf

DATA = "/usr/share/datasets/fashion-mnist"


def tf_config():
    cfg = json.loads(os.environ.get("TF_CONFIG") or "{}")
    task = cfg.get("task", {})
    return cfg, task.get("type", ""), int(task.get("index", 0))


def dataset(kind, batch, shuffle=True):
    """A repeated tf.data pipeline over the gzip IDX files: each worker reads them itself."""
    images = tf.data.FixedLengthRecordDataset(f"{DATA}/{kind}-images-idx3-ubyte.gz", 784,
                                              header_bytes=16, compression_type="GZIP")
    labels = tf.data.FixedLengthRecordDataset(f"{DATA}/{kind}-labels-idx1-ubyte.gz", 1,
                                              header_bytes=8, compression_type="GZIP")
    images = images.map(lambda r: tf.cast(tf.io.decode_raw(r, tf.uint8), tf.float32) / 255.0)
    labels = labels.map(lambda r: tf.cast(tf.io.decode_raw(r, tf.uint8)[0], tf.int64))
    ds = tf.data.Dataset.zip((images, labels))
    if shuffle:
        ds = ds.shuffle(4096, seed=1)
    return ds.repeat().batch(batch, drop_remainder=True).prefetch(2)


def test_arrays(n=10000):
    with gzip.open(f"{DATA}/t10k-images-idx3-ubyte.gz") as f:
        x = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)[:n]
    with gzip.open(f"{DATA}/t10k-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)[:n]
    return x.astype("float32") / 255.0, y.astype("int64")


def make_variables(hidden=64, aggregation=tf.VariableAggregation.NONE):
    init = tf.random.stateless_normal
    return [
        tf.Variable(init([784, hidden], seed=[1, 2]) * 0.05, name="w1", aggregation=aggregation),
        tf.Variable(tf.zeros([hidden]), name="b1", aggregation=aggregation),
        tf.Variable(init([hidden, 10], seed=[3, 4]) * 0.05, name="w2", aggregation=aggregation),
        tf.Variable(tf.zeros([10]), name="b2", aggregation=aggregation),
    ]


def forward(v, x):
    h = tf.nn.relu(tf.matmul(x, v[0]) + v[1])
    return tf.matmul(h, v[2]) + v[3]


def loss_and_accuracy(v, x, y):
    logits = forward(v, x)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    acc = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    return loss, acc


def sgd_step(v, x, y, lr):
    """One plain SGD step on the replica (the strategy decides where v lives)."""
    with tf.GradientTape() as tape:
        loss, acc = loss_and_accuracy(v, x, y)
    for var, g in zip(v, tape.gradient(loss, v)):
        var.assign_sub(lr * g)
    return loss, acc


def add_common_args(p):
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--crash-task", default="", help="TYPE:INDEX of the task that crashes")
    p.add_argument("--crash-at-step", type=int, default=0)


def test_accuracy(v):
    x, y = test_arrays()
    values = [tf.convert_to_tensor(t) for t in v]
    _, acc = loss_and_accuracy(values, tf.constant(x), tf.constant(y))
    return float(acc)


def final_record(step, acc):
    """The agent's own record format (docs/agent.md): the final test accuracy."""
    print("TFJ_PROGRESS " + json.dumps({"step": int(step), "test_accuracy": round(acc, 4),
                                        "final": True}), flush=True)
    print(f"final test accuracy {acc:.4f}", flush=True)


def maybe_crash(args, task_type, task_index, step):
    if args.crash_task == f"{task_type}:{task_index}" and step >= args.crash_at_step:
        print(f"fatal: simulated crash at step {step} in {task_type} {task_index}",
              file=sys.stderr, flush=True)
        sys.exit(3)
