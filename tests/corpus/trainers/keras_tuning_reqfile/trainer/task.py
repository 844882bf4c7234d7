"""Tunes a small Keras classifier on a CSV in Cloud Storage (written for mlsubmit's checkup tests)."""

import argparse
import io

import hypertune  # fine: cloudml-hypertune is in requirements.txt, which setup.py reads
import pandas as pd  # fine: listed in requirements.txt
import tensorflow as tf
import yaml  # expect: missing-module error -- pyyaml is neither in the image nor in requirements.txt
from google.cloud import storage  # fine: google-cloud-storage is listed in requirements.txt


def get_args():
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--job-dir",  # fine: the help says the model ignores it (Google's samples), so its local default is no loss
        default="/tmp/keras-tuning",
        help="this model ignores this field, but it is required by gcloud",
    )
    parser.add_argument("--data", default="gs://bucket/train.csv")
    parser.add_argument("--learning-rate", type=float, default=0.01)
    parser.add_argument("--settings", default="settings.yaml")
    return parser.parse_args()


def read_frame(uri):
    bucket, _, name = uri[len("gs://") :].partition("/")
    blob = storage.Client().bucket(bucket).blob(name)
    return pd.read_csv(io.BytesIO(blob.download_as_string()))


def main():
    args = get_args()
    with open(args.settings) as handle:
        settings = yaml.safe_load(handle)
    frame = read_frame(args.data)
    labels = frame.pop("label").values
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(settings["units"], activation="relu"), tf.keras.layers.Dense(1, activation="sigmoid")]
    )
    model.compile(
        optimizer=tf.keras.optimizers.Adam(lr=args.learning_rate),  # expect: keras3-lr info -- lr= leaves in Keras 3
        loss="binary_crossentropy",
        metrics=["accuracy"],
    )
    history = model.fit(frame.values, labels, epochs=settings["epochs"], validation_split=0.2)
    hypertune.HyperTune().report_hyperparameter_tuning_metric(
        hyperparameter_metric_tag="accuracy",  # fine: the job's hyperparameterMetricTag
        metric_value=history.history["val_acc"][-1],
        global_step=settings["epochs"],
    )


if __name__ == "__main__":
    main()
