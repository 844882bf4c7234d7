"""Fits a ridge regression and writes it under --job-dir (written for mlsubmit's checkup tests)."""

import argparse
import os
import pickle

import numpy as np
from sklearn.linear_model import Ridge


def parse_args(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", required=True, help="where the model goes")  # expect: job-dir error
    parser.add_argument("--alpha", type=float, default=1.0)
    parser.add_argument("--rows", type=int, default=500)
    return parser.parse_args(argv)


def main():
    args = parse_args()
    rng = np.random.default_rng(7)
    features = rng.normal(size=(args.rows, 4))
    target = features @ np.array([0.5, -1.0, 2.0, 0.0]) + rng.normal(scale=0.1, size=args.rows)
    model = Ridge(alpha=args.alpha).fit(features, target)
    os.makedirs(args.job_dir, exist_ok=True)
    with open(os.path.join(args.job_dir, "model.pkl"), "wb") as out:
        pickle.dump(model, out)


if __name__ == "__main__":
    main()
