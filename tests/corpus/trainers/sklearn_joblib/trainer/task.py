"""Searches a boosted-trees pipeline and saves the best one (written for mlsubmit's checkup tests)."""

import argparse
import os

import numpy as np
from sklearn.cross_validation import train_test_split  # expect: sklearn-removed error -- gone in 0.20
from sklearn.externals import joblib  # expect: sklearn-removed error -- gone in 0.23

from trainer import model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", default="/tmp/churn-model")  # expect: job-dir warning -- lost with the replica
    parser.add_argument("--folds", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    features = rng.normal(size=(600, 5))
    features[rng.rand(600, 5) < 0.05] = np.nan
    labels = (np.nansum(features[:, :2], axis=1) > 0).astype(int)
    train_x, test_x, train_y, test_y = train_test_split(features, labels, test_size=0.25)  # also: sklearn-removed error
    best = model.search(args.folds).fit(train_x, train_y).best_estimator_
    print("held-out accuracy", best.score(test_x, test_y))
    joblib.dump(best, os.path.join(args.job_dir, "model.joblib"))  # also: sklearn-removed error


if __name__ == "__main__":
    main()
