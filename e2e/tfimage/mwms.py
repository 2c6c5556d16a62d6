"""MultiWorkerMirroredStrategy, reading TF_CONFIG, with a custom training
loop: every worker runs the same steps, the variables' MEAN aggregation
averages the updates across workers, and each worker draws a Keras
Progbar (`Epoch e/n` and `s/t ... - accuracy: ... - loss: ...` lines), then
prints the final test accuracy as a TFJ_PROGRESS record."""
import argparse
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
import tensorflow as tf  # noqa: E402

import fmnist  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--steps-per-epoch", type=int, default=60)
    fmnist.add_common_args(p)
    args = p.parse_args()

    cfg, task_type, task_index = fmnist.tf_config()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    workers = strategy.num_replicas_in_sync
    with strategy.scope():
        v = fmnist.make_variables(aggregation=tf.VariableAggregation.MEAN)
    ds = fmnist.dataset("train", args.batch * workers)
    opts = tf.data.Options()
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    it = iter(strategy.experimental_distribute_dataset(ds.with_options(opts)))

    @tf.function
    def train_step(it):
        x, y = next(it)
        loss, acc = strategy.run(fmnist.sgd_step, args=(v, x, y, args.lr))
        mean = tf.distribute.ReduceOp.MEAN
        return strategy.reduce(mean, loss, axis=None), strategy.reduce(mean, acc, axis=None)

    step = 0
    for epoch in range(1, args.epochs + 1):
        print(f"Epoch {epoch}/{args.epochs}", flush=True)
        bar = tf.keras.utils.Progbar(args.steps_per_epoch, stateful_metrics=["loss", "accuracy"])
        for i in range(1, args.steps_per_epoch + 1):
            loss, acc = train_step(it)
            step += 1
            fmnist.maybe_crash(args, task_type, task_index, step)
            bar.update(i, values=[("accuracy", float(acc)), ("loss", float(loss))])
        sys.stdout.flush()
    fmnist.final_record(step, fmnist.test_accuracy(v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
