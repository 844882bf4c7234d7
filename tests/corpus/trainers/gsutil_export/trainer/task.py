"""Trains on data copied to local disk and reports to the ml v1 API (written for mlsubmit's checkup tests)."""

import argparse
import os

import tensorflow as tf
from googleapiclient import discovery

from trainer import storage


def job_state(project, job):
    ml = discovery.build("ml", "v1", cache_discovery=False)  # expect: ml-v1-api error -- AI Platform is shut down
    name = "projects/%s/jobs/%s" % (project, job)
    return ml.projects().jobs().get(name=name).execute()["state"]


def bucket_labels(bucket):
    gcs = discovery.build("storage", "v1", cache_discovery=False)  # fine: Cloud Storage is still served
    return gcs.buckets().get(bucket=bucket).execute().get("labels", {})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--job-dir", required=True)
    args = parser.parse_args()
    storage.download(args.data, "/tmp/data")
    files = tf.io.gfile.glob("/tmp/data/*.csv")
    print("training on", len(files), "files; job", job_state(os.environ.get("PROJECT", ""), os.environ.get("JOB", "")))
    storage.compress("/tmp/data")
    storage.upload("/tmp/data.tgz", args.job_dir)
    storage.export_metrics(os.path.join(args.job_dir, "metrics.csv"))


if __name__ == "__main__":
    main()
