"""Boosted trees for delivery times, and a classifier for late deliveries (written for mlsubmit's checkup tests)."""

import argparse
import os

import numpy as np
import xgboost as xgb

REGRESSION = {"objective": "reg:linear", "max_depth": 4, "eta": 0.1}  # expect: xgboost-deprecated warning
CLASSIFIER = {"objective": "binary:logistic", "max_depth": 3}  # fine: a current objective


def synthetic(rows, seed):
    rng = np.random.default_rng(seed)
    features = rng.uniform(size=(rows, 6))
    minutes = 20 + 30 * features[:, 0] + 10 * features[:, 1] ** 2 + rng.normal(scale=2, size=rows)
    return features, minutes


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args()
    features, minutes = synthetic(2000, 1)
    times = xgb.train(REGRESSION, xgb.DMatrix(features, label=minutes), num_boost_round=args.rounds)
    late = xgb.train(CLASSIFIER, xgb.DMatrix(features, label=minutes > 45), num_boost_round=args.rounds)
    out = os.environ.get("AIP_MODEL_DIR", "model")
    os.makedirs(out, exist_ok=True)
    times.save_model(os.path.join(out, "times.bst"))
    late.save_model(os.path.join(out, "late.bst"))


if __name__ == "__main__":
    main()
