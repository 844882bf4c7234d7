"""Who am I in the cluster? Read from TF_CONFIG (written for mlsubmit's checkup tests)."""

import json
import os


def tf_config():
    return json.loads(os.environ.get("TF_CONFIG", "{}"))


def is_primary():
    task = tf_config().get("task", {})
    return task.get("type") == "master"  # expect: tf-config-primary error -- Vertex AI names the primary 'chief'


def parameter_servers():
    cluster = tf_config().get("cluster", {})
    return cluster["ps"]  # expect: tf-config-cluster error -- a job without ps replicas has no 'ps' key (KeyError)


def evaluators():
    return tf_config().get("cluster", {}).get("evaluator", [])  # fine: .get() with a default


def worker_count():
    cluster = tf_config().get("cluster", {})
    return len(cluster["worker"])  # fine: this job has workers
