"""Fits a linear model by gradient descent and logs its error for tuning (written for mlsubmit's checkup tests)."""

import argparse
import os

import tensorflow as tf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", default="gs://example-bucket/linear")  # fine: a Cloud Storage default
    parser.add_argument("--learning-rate", type=float, default=0.05)
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()

    features = tf.random.stateless_uniform((1024, 3), seed=(3, 4))
    target = tf.linalg.matvec(features, [1.5, -2.0, 0.5]) + 0.3
    weights, bias = tf.Variable(tf.zeros(3)), tf.Variable(0.0)
    optimizer = tf.keras.optimizers.SGD(learning_rate=args.learning_rate)
    writer = tf.summary.create_file_writer(os.path.join(args.job_dir, "eval"))
    for epoch in range(args.epochs):
        with tf.GradientTape() as tape:
            error = tf.linalg.matvec(features, weights) + bias - target
            loss = tf.reduce_mean(tf.square(error))
        optimizer.apply_gradients(zip(tape.gradient(loss, [weights, bias]), [weights, bias]))
        with writer.as_default():
            tf.summary.scalar("rmse", tf.sqrt(loss), step=epoch)  # expect: hypertune-missing error -- only a summary


if __name__ == "__main__":
    main()
