"""Fits a k-means model in a container and keeps it on the container's disk (written for mlsubmit's checkup
tests)."""

import os
import pickle

import numpy as np
from sklearn.cluster import KMeans


def main():
    points = np.random.default_rng(5).normal(size=(300, 2))
    model = KMeans(n_clusters=3, n_init=10).fit(points)
    os.makedirs("output", exist_ok=True)
    with open(os.path.join("output", "kmeans.pkl"), "wb") as out:  # the file is gone when the container stops
        pickle.dump(model, out)


if __name__ == "__main__":
    main()
