"""A Keras classifier written for Vertex AI, reporting its tuning metric (written for mlsubmit's checkup tests)."""

import argparse
import json
import os

import hypertune
import numpy as np
import tensorflow as tf

METRIC = "accuracy"


def role():
    task = json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {})
    return task.get("type", "chief"), task.get("index", 0)


def is_primary():
    kind, _ = role()
    return kind in ("chief", "master")  # fine: both names of the primary replica


def read(pattern):
    rows = []
    for path in tf.io.gfile.glob(pattern):  # fine: tf.io.gfile
        with tf.io.gfile.GFile(path) as handle:
            rows.append(np.loadtxt(handle, delimiter=","))
    data = np.concatenate(rows)
    return data[:, :-1], data[:, -1]


class Report(tf.keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.tuning = hypertune.HyperTune()

    def on_epoch_end(self, epoch, logs=None):
        self.tuning.report_hyperparameter_tuning_metric(  # fine: the job's tag
            hyperparameter_metric_tag=METRIC, metric_value=(logs or {}).get("val_accuracy", 0.0), global_step=epoch
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", required=True)
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--job-dir", default=os.environ.get("AIP_MODEL_DIR"))  # fine: the job passes it
    args = parser.parse_args()
    strategy = tf.distribute.MultiWorkerMirroredStrategy()  # fine: the stable name since 2.4
    features, labels = read(args.train)
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
        model.compile(
            optimizer=tf.keras.optimizers.Adam(learning_rate=args.learning_rate),  # fine: learning_rate=
            loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
            metrics=[METRIC],
        )
    model.fit(features, labels, validation_split=0.2, epochs=5, callbacks=[Report()])
    kind, index = role()
    folder = args.job_dir if is_primary() else os.path.join("/tmp", f"{kind}-{index}")
    model.save(os.path.join(folder, "model.keras"))  # fine: a .keras file, no save_format


if __name__ == "__main__":
    main()
