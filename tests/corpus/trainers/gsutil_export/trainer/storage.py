"""Moves files between Cloud Storage, BigQuery and the replica's disk (written for mlsubmit's checkup tests)."""

import os
import subprocess


def download(source, folder):
    os.makedirs(folder, exist_ok=True)
    subprocess.check_call(["gsutil", "-m", "cp", "-r", source, folder])  # expect: cloud-sdk-command warning


def upload(folder, destination):
    os.system("gcloud storage cp --recursive %s %s" % (folder, destination))  # expect: cloud-sdk-command warning


def load_table(table, uri):
    command = "bq load --source_format=CSV {} {}".format(table, uri)
    subprocess.run(command.split(), check=True)  # missed: a command built in a variable is not followed (a known limit)


def export_metrics(path):
    subprocess.run(f"bq load metrics.runs {path}", shell=True, check=True)  # expect: cloud-sdk-command warning


def compress(folder):
    subprocess.run(["tar", "czf", folder + ".tgz", folder], check=True)  # fine: tar is in every image
