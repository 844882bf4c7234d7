"""A real TensorFlow trainer: fits y = 3x + 2 with tf.distribute, choosing the strategy from TF_CONFIG.

* A cluster with parameter servers runs ParameterServerStrategy: workers and parameter servers start a
  ``tf.distribute.Server`` and serve until stopped; the chief coordinates the steps (ClusterCoordinator).
* Otherwise MultiWorkerMirroredStrategy: the chief and every worker train in lockstep, gradients all-reduced
  across them; with no ``cluster`` in TF_CONFIG it is an ordinary single-process run.

No Keras, so it works with whichever Keras (2 or 3) comes with TensorFlow. The chief writes ``model.json`` to
``--job-dir``; with MultiWorkerMirroredStrategy every replica also writes ``replicas/ROLE-INDEX.json`` and then
waits on a final all-reduce, so each file is written before the chief can finish (and the run end).

Run it:  mlsubmit local train --package-path examples/trainer_tf/trainer --module-name trainer.task \\
             --distributed --worker-count 1 --parameter-server-count 0 --job-dir /tmp/tf-demo
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow is imported: keep the demo readable

import tensorflow as tf


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--job-dir", default=None, help="Where to write the model (a local directory).")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--learning-rate", type=float, default=0.3)
    parser.add_argument("--batch-size", type=int, default=64)
    return parser.parse_args(argv)


def make_data(batch_size: int, seed: int) -> tuple[tf.Tensor, tf.Tensor]:
    x = tf.random.stateless_uniform([batch_size], seed=[seed, 1], minval=-1.0, maxval=1.0)
    return x, 3.0 * x + 2.0


def write_json(job_dir: str | None, name: str, data: dict[str, object]) -> None:
    if not job_dir:
        return
    path = os.path.join(job_dir, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)


def run_parameter_server_strategy(
    resolver: tf.distribute.cluster_resolver.ClusterResolver, args: argparse.Namespace
) -> None:
    if resolver.task_type in ("worker", "ps"):
        print(f"{resolver.task_type}-{resolver.task_id}: serving until the chief is done")
        server = tf.distribute.Server(
            resolver.cluster_spec(),
            job_name=resolver.task_type,
            task_index=resolver.task_id,
            protocol=resolver.rpc_layer or "grpc",
            start=True,
        )
        server.join()
        return
    strategy = tf.distribute.ParameterServerStrategy(resolver)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        w = tf.Variable(0.0)
        b = tf.Variable(0.0)

    def dataset_fn() -> tf.data.Dataset:
        x, y = make_data(args.batch_size, seed=7)
        return tf.data.Dataset.from_tensors((x, y)).repeat()

    iterator = iter(coordinator.create_per_worker_dataset(dataset_fn))

    @tf.function
    def step(batches: object) -> tf.Tensor:
        def replica_fn(batch: tuple[tf.Tensor, tf.Tensor]) -> tf.Tensor:
            x, y = batch
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(w * x + b - y))
            grad_w, grad_b = tape.gradient(loss, [w, b])
            w.assign_sub(args.learning_rate * grad_w)
            b.assign_sub(args.learning_rate * grad_b)
            return loss

        return strategy.run(replica_fn, args=(next(batches),))  # type: ignore[call-overload]

    losses = [coordinator.schedule(step, args=(iterator,)) for _ in range(args.steps)]
    coordinator.join()
    loss = float(losses[-1].fetch())
    print(
        f"chief: ParameterServerStrategy with {strategy.num_replicas_in_sync} replicas, "
        f"{len(resolver.cluster_spec().as_dict().get('worker', []))} workers: loss={loss:.4f}"
    )
    write_json(
        args.job_dir,
        "model.json",
        {"strategy": "ps", "w": float(w.numpy()), "b": float(b.numpy()), "loss": loss},
    )
    print("chief: done")


def run_multi_worker_mirrored(
    resolver: tf.distribute.cluster_resolver.ClusterResolver, args: argparse.Namespace
) -> None:
    strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
    role = resolver.task_type or "chief"
    name = f"{role}-{resolver.task_id or 0}"
    with strategy.scope():
        w = tf.Variable(0.0)
        b = tf.Variable(0.0)
    x, y = make_data(
        args.batch_size, seed=int(resolver.task_id or 0) + (0 if role in ("chief", "master") else 100)
    )

    @tf.function
    def step() -> tf.Tensor:
        def replica_fn() -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(w * x + b - y))
            grad_w, grad_b = tape.gradient(loss, [w, b])
            return grad_w, grad_b, loss

        grad_w, grad_b, loss = strategy.run(replica_fn)
        mean = tf.distribute.ReduceOp.MEAN
        w.assign_sub(args.learning_rate * strategy.reduce(mean, grad_w, axis=None))
        b.assign_sub(args.learning_rate * strategy.reduce(mean, grad_b, axis=None))
        return strategy.reduce(mean, loss, axis=None)

    @tf.function
    def count_replicas() -> tf.Tensor:
        return strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(lambda: tf.constant(1.0)), axis=None)

    loss = float("nan")
    for _ in range(args.steps):
        loss = float(step())
    result = {
        "strategy": "mwms",
        "replica": name,
        "w": float(w.numpy()),
        "b": float(b.numpy()),
        "loss": loss,
        "replicas_in_sync": strategy.num_replicas_in_sync,
    }
    print(
        f"{name}: MultiWorkerMirroredStrategy with {strategy.num_replicas_in_sync} replicas: loss={loss:.4f}"
    )
    write_json(args.job_dir, f"replicas/{name}.json", result)
    if role in ("chief", "master"):
        write_json(args.job_dir, "model.json", result)
    # A last all-reduce as a barrier: no replica finishes before every replica has written its file.
    seen = int(count_replicas())
    print(f"{name}: done ({seen} replicas reached the final all-reduce)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if resolver.cluster_spec().as_dict().get("ps"):
        run_parameter_server_strategy(resolver, args)
    else:
        run_multi_worker_mirrored(resolver, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
