"""Trains a regression model on every replica with a multi-worker strategy (written for mlsubmit's checkup tests)."""

import argparse
import os

import tensorflow as tf

from trainer import cluster


def dataset(batch_size):
    features = tf.random.stateless_normal((4096, 8), seed=(1, 2))
    targets = tf.reduce_sum(features, axis=1, keepdims=True)
    return tf.data.Dataset.from_tensor_slices((features, targets)).repeat().batch(batch_size)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", default=os.environ.get("AIP_MODEL_DIR"))
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()

    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()  # expect: tf-distribute-moved warning
    print("parameter servers:", len(cluster.parameter_servers()))
    batch = 32 * strategy.num_replicas_in_sync
    data = strategy.experimental_distribute_datasets_from_function(  # expect: tf-distribute-moved warning
        lambda context: dataset(batch // context.num_replicas_in_sync)
    )
    del data
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(1, input_shape=(8,))])
        model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.01), loss="mse")
    model.fit(dataset(batch), steps_per_epoch=args.steps, epochs=1)
    if cluster.is_primary():
        model.save(os.path.join(args.job_dir, "model.keras"))  # fine: no save_format
    else:
        model.save(os.path.join("/tmp", "worker-copy.keras"))


if __name__ == "__main__":
    main()
