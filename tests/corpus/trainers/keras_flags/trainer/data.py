"""Reads labelled sensor windows from CSV shards (written for mlsubmit's checkup tests)."""

import random

import numpy as np
import tensorflow as tf

WINDOW = 16


def shards(pattern):
    return sorted(tf.gfile.Glob(pattern))  # expect: tf-gfile error -- tf.gfile left TensorFlow in 2.0


def windows(pattern, batch_size):
    """Endless batches of (window, label) for Model.fit_generator."""
    paths = shards(pattern)
    while True:
        random.shuffle(paths)
        for path in paths:
            with tf.gfile.Open(path) as handle:  # also: tf-gfile error
                rows = np.loadtxt(handle, delimiter=",")
            for start in range(0, len(rows) - batch_size, batch_size):
                batch = rows[start : start + batch_size]
                yield batch[:, :WINDOW], batch[:, WINDOW]


def count_rows(pattern):
    total = 0
    for path in shards(pattern):
        with tf.io.gfile.GFile(path) as handle:  # fine: tf.io.gfile is the TF2 home of gfile
            total += sum(1 for _ in handle)
    return total
