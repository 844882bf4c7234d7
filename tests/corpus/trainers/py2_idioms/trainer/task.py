"""Trains a bag-of-words classifier, Python 2 style (written for mlsubmit's checkup tests)."""

import argparse

import tensorflow as tf

import vocab  # expect: py2 error -- implicit relative import of trainer/vocab.py
from trainer import compat


def batches(rows, size):
    for start in xrange(0, len(rows), size):  # expect: py2 error -- xrange is range in Python 3
        yield rows[start : start + size]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--text", required=True)
    parser.add_argument("--options", default="")
    args = parser.parse_args()
    options = dict(item.split("=") for item in args.options.split(",") if item)
    if options.has_key("lowercase"):  # expect: py2 error -- dicts lost has_key()
        print("lowercase is always on")
    with tf.io.gfile.GFile(args.text) as handle:
        words = vocab.top(vocab.count(handle), 5000)
    compat.dump(words, "/tmp/vocab.pkl")
    for batch in batches(sorted(words), 128):
        print(len(batch))


if __name__ == "__main__":
    main()
