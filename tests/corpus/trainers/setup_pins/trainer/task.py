"""Forecasts weekly demand with a small Keras network (written for mlsubmit's checkup tests)."""

import argparse
import os

import numpy as np
import pandas as pd  # fine: declared in setup.py
import requests  # fine: TensorFlow's own requirement, in the image
import tensorflow as tf
import yaml  # expect: missing-module error -- neither in the image nor in install_requires
from google.cloud import storage  # expect: missing-module error -- google-cloud-storage is not declared

try:
    import matplotlib  # fine: optional, guarded
except ImportError:
    matplotlib = None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--config", required=True)
    parser.add_argument("--job-dir", required=True)
    args = parser.parse_args()
    settings = yaml.safe_load(requests.get(args.config, timeout=10).text)
    weeks = pd.Series(np.sin(np.arange(200) / 8.0) + 2).rolling(4).mean().dropna().to_numpy()
    windows = np.stack([weeks[i : i + 8] for i in range(len(weeks) - 8)])
    model = tf.keras.Sequential([tf.keras.layers.Dense(settings.get("units", 8)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="adam", loss="mse")
    model.fit(windows[:, :7], windows[:, 7], epochs=2, verbose=0)
    path = os.path.join("/tmp", "model.keras")
    model.save(path)
    bucket, _, prefix = args.job_dir.removeprefix("gs://").partition("/")
    storage.Client().bucket(bucket).blob(prefix + "/model.keras").upload_from_filename(path)


if __name__ == "__main__":
    main()
