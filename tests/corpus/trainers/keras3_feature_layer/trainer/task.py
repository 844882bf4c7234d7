"""Trains the wide model and saves it as a SavedModel (written for mlsubmit's checkup tests)."""

import argparse
import os

import tensorflow as tf

from trainer import model as wide


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", default=os.environ.get("AIP_MODEL_DIR", "gs://bucket/model"))
    parser.add_argument("--learning-rate", type=float, default=0.01)
    args = parser.parse_args()
    model = wide.build(args.learning_rate)
    data = tf.data.experimental.make_csv_dataset("gs://bucket/census.csv", batch_size=64, label_name="income")
    accuracy = tf.keras.metrics.BinaryAccuracy()
    model.fit(data, epochs=3)
    accuracy.reset_states()  # expect: keras3-removed error -- reset_state() in Keras 3
    model.save("export")  # expect: keras3-removed error -- Keras 3 saves only .keras / .h5 files
    model.save(os.path.join(args.job_dir, "model.keras"))  # fine: not a literal path, and a .keras one
    model.save("model.keras")  # fine: a .keras file


if __name__ == "__main__":
    main()
