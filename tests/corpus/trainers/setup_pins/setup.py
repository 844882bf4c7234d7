"""The trainer package (written for mlsubmit's checkup tests)."""

from setuptools import find_packages, setup

TENSORFLOW = "tensorflow==1.15.5"  # expect: requirements error -- excludes the image's TensorFlow 2.17

REQUIRED = [
    TENSORFLOW,
    "tensorflow-gpu>=1.15",  # expect: requirements error -- no longer published; TensorFlow has GPU support
    "keras<3",  # expect: requirements error -- TensorFlow 2.17's Keras is 3
    "pandas>=1.0",  # fine: not in the image, declared here
    "numpy",  # fine: no version asked
]

setup(name="trainer", version="0.3", packages=find_packages(), install_requires=REQUIRED)
