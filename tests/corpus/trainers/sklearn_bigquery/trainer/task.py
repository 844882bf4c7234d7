"""Fits a price model on a BigQuery table (written for mlsubmit's checkup tests)."""

import argparse
import os

import pandas as pd
from google.cloud import storage
from sklearn.datasets import load_boston  # expect: sklearn-removed error -- removed in 1.2
from sklearn.externals import joblib  # expect: sklearn-removed error -- removed in 0.23
from sklearn.linear_model import Ridge
from sklearn.metrics import jaccard_score  # fine: the replacement of jaccard_similarity_score

QUERY = "SELECT * FROM `project.dataset.houses`"


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--job-dir", default="gs://bucket/out")
    parser.add_argument("--key", default="key.json")
    parser.add_argument("--project", default="project")
    return parser.parse_args()


def main():
    args = parse_args()
    frame = pd.read_gbq(QUERY, project_id=args.project, private_key=args.key)  # expect: pandas-removed warning
    frame = frame if len(frame) else pd.DataFrame(load_boston().data)  # also: sklearn-removed error
    labels = frame.pop("price")
    for _ in xrange(3):  # expect: py2 error -- Python 2 builtin
        model = Ridge().fit(frame.values, labels.values)
    joblib.dump(model, "model.joblib")  # also: sklearn-removed error
    frame.to_gbq("dataset.scored", project_id=args.project, credentials=None)  # fine: credentials=, not private_key=
    bucket, _, prefix = args.job_dir[len("gs://") :].partition("/")
    storage.Client().bucket(bucket).blob(os.path.join(prefix, "model.joblib")).upload_from_filename("model.joblib")
    print(jaccard_score([1, 0], [1, 0]))


if __name__ == "__main__":
    main()
