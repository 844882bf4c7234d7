"""A Keras classifier whose validation accuracy is reported to the tuning service (written for mlsubmit's checkup
tests)."""

import argparse

import hypertune
import tensorflow as tf

METRIC_TAG = "val_accuracy"


class ReportMetric(tf.keras.callbacks.Callback):
    """Reports the epoch's validation accuracy with cloudml-hypertune."""

    def __init__(self):
        super().__init__()
        self.reporter = hypertune.HyperTune()

    def on_epoch_end(self, epoch, logs=None):
        self.reporter.report_hyperparameter_tuning_metric(  # expect: hypertune-tag error -- the job tunes 'accuracy'
            hyperparameter_metric_tag=METRIC_TAG,
            metric_value=(logs or {}).get("val_accuracy", 0.0),
            global_step=epoch,
        )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--units", type=int, default=16)
    parser.add_argument("--job-dir")  # fine: no default, the job decides
    args = parser.parse_args()
    (images, labels), _ = tf.keras.datasets.mnist.load_data()
    images = images[:2000].reshape(-1, 784) / 255.0
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(args.units, activation="relu"), tf.keras.layers.Dense(10, activation="softmax")]
    )
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(images, labels[:2000], validation_split=0.2, epochs=3, callbacks=[ReportMetric()])


if __name__ == "__main__":
    main()
