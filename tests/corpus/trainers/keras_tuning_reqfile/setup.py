"""The trainer package; what it needs is listed in requirements.txt (written for mlsubmit's checkup tests)."""

import io

from setuptools import find_packages, setup

with io.open("requirements.txt", encoding="utf-8") as listed:  # fine: setup.py installs the file's lines
    REQUIRED = [line.strip() for line in listed if line.strip() and not line.startswith("#")]

setup(name="trainer", version="1.0", packages=find_packages(), install_requires=REQUIRED)
