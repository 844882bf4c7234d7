"""The trainer package (written for mlsubmit's checkup tests)."""

from setuptools import find_packages, setup

REQUIRED = [
    "pandas-gbq==0.3.0",  # expect: requirements error -- older than the 0.19.0 today's pandas imports
    "google-cloud-storage",  # fine: no version asked
    "scikit-learn>=0.20",  # fine: allows the image's 1.3
]

setup(name="trainer", version="0.1", packages=find_packages(), install_requires=REQUIRED)
