"""Trains a wide-and-deep default classifier with a canned estimator (written for mlsubmit's checkup tests)."""

import argparse
import json
import os

import tensorflow as tf

from trainer import columns


def read_rows(pattern, batch_size, epochs):
    defaults = [[0.0]] * len(columns.NUMERIC) + [[""]] * len(columns.CATEGORIES) + [[0]]
    names = list(columns.NUMERIC) + sorted(columns.CATEGORIES) + [columns.LABEL]

    def parse(line):
        values = tf.io.decode_csv(line, record_defaults=defaults)  # fine: tf.io.decode_csv is TF2
        features = dict(zip(names, values))
        return features, features.pop(columns.LABEL)

    files = tf.data.Dataset.list_files(pattern)
    return files.interleave(tf.data.TextLineDataset).map(parse).repeat(epochs).batch(batch_size)


def session_config():
    config = json.loads(os.environ.get("TF_CONFIG", "{}"))
    task = config.get("task", {})
    if task.get("type") in ("chief", "master"):  # fine: both names of the primary replica
        return tf.compat.v1.ConfigProto(device_filters=["/job:ps", "/job:" + task["type"]])  # fine: compat.v1
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-files", required=True)
    parser.add_argument("--eval-files", required=True)
    parser.add_argument("--job-dir", required=True)  # fine: this job passes --job-dir
    parser.add_argument("--train-steps", type=int, default=2000)
    args = parser.parse_args()
    tf.logging.set_verbosity(tf.logging.INFO)  # expect: tf-logging error -- tf.logging left TensorFlow in 2.0

    wide, deep = columns.wide_and_deep()
    run_config = tf.estimator.RunConfig(  # expect: tf-estimator error -- tf.estimator was removed in 2.16
        model_dir=args.job_dir, session_config=session_config()
    )
    model = tf.estimator.DNNLinearCombinedClassifier(  # also: tf-estimator error
        linear_feature_columns=wide,
        linear_optimizer=tf.train.FtrlOptimizer(learning_rate=0.05),  # expect: tf1-api error -- TF1 optimizer
        dnn_feature_columns=deep,
        dnn_hidden_units=[64, 32],
        config=run_config,
    )
    hparams = tf.contrib.training.HParams(batch_size=256)  # expect: tf-contrib error -- tf.contrib is gone in 2.0
    train = tf.estimator.TrainSpec(  # also: tf-estimator error
        lambda: read_rows(args.train_files, hparams.batch_size, None), max_steps=args.train_steps
    )
    evaluate = tf.estimator.EvalSpec(lambda: read_rows(args.eval_files, hparams.batch_size, 1))  # also: tf-estimator error
    tf.estimator.train_and_evaluate(model, train, evaluate)  # also: tf-estimator error


if __name__ == "__main__":
    main()
