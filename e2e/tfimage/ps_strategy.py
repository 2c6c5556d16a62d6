"""ParameterServerStrategy with the chief as coordinator, reading TF_CONFIG.

ps and worker tasks run a tf.distribute.Server and wait; the chief builds
the variables (placed on the ps), schedules a custom training step on the
workers through a ClusterCoordinator and logs `loss = ..., step = ...`
through TensorFlow's logger (the tf.estimator shape), then prints the final
test accuracy as a TFJ_PROGRESS record."""
import argparse
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")
import tensorflow as tf  # noqa: E402

import fmnist  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--log-every", type=int, default=20)
    fmnist.add_common_args(p)
    args = p.parse_args()

    cfg, task_type, task_index = fmnist.tf_config()
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if task_type in ("ps", "worker"):
        server = tf.distribute.Server(resolver.cluster_spec(), job_name=task_type,
                                      task_index=task_index, protocol="grpc", start=True)
        print(f"{task_type} {task_index} serving", flush=True)
        server.join()
        return 0
    if task_type != "chief":
        print(f"unexpected task type '{task_type}'", file=sys.stderr)
        return 2

    log = tf.get_logger()
    log.setLevel("INFO")
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        v = fmnist.make_variables()

    def dataset_fn():
        return fmnist.dataset("train", args.batch)

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def train_step(it):
        x, y = next(it)
        return strategy.run(fmnist.sgd_step, args=(v, x, y, args.lr))

    step, t0 = 0, time.time()
    while step < args.steps:
        results = [coordinator.schedule(train_step, args=(iterator,))
                   for _ in range(min(args.log_every, args.steps - step))]
        coordinator.join()
        step += len(results)
        fmnist.maybe_crash(args, task_type, task_index, step)
        loss, _ = results[-1].fetch()
        now = time.time()
        log.info("loss = %.4f, step = %d (%.3f sec)", loss, step, now - t0)
        t0 = now
    fmnist.final_record(step, fmnist.test_accuracy(v))
    return 0


if __name__ == "__main__":
    sys.exit(main())
