"""The checkup's rules, one snippet each: what fires, on which line, and the look-alikes that must not."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mlsubmit import console
from mlsubmit.console import Console
from mlsubmit.migrate.checkup import MAX_MODULE_BYTES, check_files, image_versions, job_facts, summary_line
from mlsubmit.migrate.findings import Finding, ImageVersions, JobFacts
from mlsubmit.migrate.requirements import TF_IMAGE_MODULES

TF217 = ImageVersions(
    source="test", python="3.10", tensorflow="2.17", packages={"scikit-learn": "1.3", "pandas": "2.2"}
)


def facts(**changes: object) -> JobFacts:
    base: dict[str, object] = {
        "target": "vertex",
        "primary": "chief",
        "distributed": True,
        "job_dir": True,
        "container": False,
        "metric_tag": None,
        "versions": TF217,
        "roles": frozenset({"chief", "worker"}),
    }
    base.update(changes)
    return JobFacts(**base)  # type: ignore[arg-type]


def run(tmp_path: Path, source: str, job: JobFacts | None = None, setup: str | None = None) -> list[Finding]:
    package = tmp_path / "trainer"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "task.py").write_text(textwrap.dedent(source))
    if setup is not None:
        (tmp_path / "setup.py").write_text(textwrap.dedent(setup))
    files = {"trainer/__init__.py": package / "__init__.py", "trainer/task.py": package / "task.py"}
    return list(check_files(files, job or facts(), project_dir=tmp_path, entry="trainer/task.py").findings)


def rules(findings: list[Finding]) -> list[tuple[str, int, str]]:
    return [(f.rule, f.line, f.severity) for f in findings]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # a Keras optimizer's lr=, however it is imported
        ("import tensorflow as tf\ntf.keras.optimizers.Adam(lr=0.1)\n", [("keras3-lr", 2, "error")]),
        ("from tensorflow.keras.optimizers import Adam as A\nA(lr=0.1)\n", [("keras3-lr", 2, "error")]),
        ("from tensorflow import keras\nkeras.optimizers.SGD(lr=0.1)\n", [("keras3-lr", 2, "error")]),
        # look-alikes: PyTorch's lr=, Keras with learning_rate=, an unrelated module named like keras
        ("import torch\ntorch.optim.SGD([], lr=0.1)\n", []),
        ("import torch.optim as optim\noptim.Adam([], lr=0.1)\n", []),
        ("import tensorflow as tf\ntf.keras.optimizers.Adam(learning_rate=0.1)\n", []),
        # TF1 API through compat.v1 is fine; the same names on tf are not
        ("import tensorflow.compat.v1 as tf\ntf.Session()\ntf.placeholder(tf.float32)\n", []),
        ("import tensorflow as tf\nwith tf.Session() as s:\n    pass\n", [("tf1-api", 2, "error")]),
        ("from tensorflow.contrib import layers\n", [("tf-contrib", 1, "error")]),
        ("import tensorflow as tf\nflags = tf.app.flags\n", [("tf-app-flags", 2, "error")]),
        ("import tensorflow as tf\ntf.gfile.Open('x')\ntf.io.gfile.GFile('x')\n", [("tf-gfile", 2, "error")]),
        ("import tensorflow as tf\ntf.estimator.RunConfig()\n", [("tf-estimator", 2, "error")]),
        (
            "import tensorflow as tf\ntf.distribute.experimental.MultiWorkerMirroredStrategy()\n",
            [("tf-distribute-moved", 2, "warning")],
        ),
        ("import tensorflow as tf\ntf.distribute.MultiWorkerMirroredStrategy()\n", []),
        # Keras 3 method changes, only where Keras is imported
        ("import keras\nm = keras.Model()\nm.fit_generator(g)\n", [("keras3-generator", 3, "error")]),
        ("import lightgbm\nm.fit_generator(g)\n", []),
        (
            "from tensorflow.keras import backend as K\nK.set_session(s)\n",
            [("keras3-session", 2, "error")],
        ),
        ("import tensorflow as tf\ntf.compat.v1.keras.backend.set_session(s)\n", []),
        ("import tensorflow as tf\nm.save('d', save_format='tf')\n", [("keras3-save-format", 2, "error")]),
        # scikit-learn and pandas
        ("from sklearn.externals import joblib\n", [("sklearn-removed", 1, "error")]),
        ("import joblib\nfrom sklearn import model_selection\n", []),
        ("from sklearn.cross_validation import train_test_split\n", [("sklearn-removed", 1, "error")]),
        ("import pandas as pd\npd.read_csv('f', error_bad_lines=False)\n", [("pandas-removed", 2, "error")]),
        (
            "import pandas as pd\ndf = pd.DataFrame()\ndf.as_matrix()\ndf.ix[0]\n",
            [("pandas-removed", 3, "error"), ("pandas-removed", 4, "error")],
        ),
        (
            "import xgboost as xgb\nxgb.train({'objective': 'reg:linear'}, d)\n",
            [("xgboost-deprecated", 2, "warning")],
        ),
        # Cloud SDK commands and the ml v1 API
        (
            "import subprocess\nsubprocess.check_call(['gsutil', 'cp', a, b])\n",
            [("cloud-sdk-command", 2, "warning")],
        ),
        ("import os\nos.system('gsutil -m cp %s %s' % (a, b))\n", [("cloud-sdk-command", 2, "warning")]),
        (
            "import subprocess as sp\nsp.run(f'gcloud storage cp {a} {b}', shell=True)\n",
            [("cloud-sdk-command", 2, "warning")],
        ),
        ("import subprocess\nsubprocess.run(['python', '-m', 'x'])\n", []),
        ("from googleapiclient import discovery\ndiscovery.build('ml', 'v1')\n", [("ml-v1-api", 2, "error")]),
        ("from googleapiclient import discovery\ndiscovery.build('storage', 'v1')\n", []),
        # Python 2
        ("for i in xrange(3):\n    pass\n", [("py2", 1, "error")]),
        ("from six.moves import xrange\nfor i in xrange(3):\n    pass\n", []),
        ("d = {}\nfor k, v in d.iteritems():\n    pass\n", [("py2", 2, "error")]),
        ("import six\nfor k, v in six.iteritems({}):\n    pass\n", []),
        ("import cPickle\n", [("py2", 1, "error")]),
        ("try:\n    import cPickle as pickle\nexcept ImportError:\n    import pickle\n", []),
        ("print 'hello'\n", [("py2-syntax", 1, "error")]),
    ],
)
def test_rule(tmp_path: Path, source: str, expected: list[tuple[str, int, str]]) -> None:
    assert rules(run(tmp_path, source)) == expected


def test_a_removed_api_is_a_note_before_its_version_and_a_warning_when_the_version_is_unknown(
    tmp_path: Path,
) -> None:
    source = "import tensorflow as tf\ntf.estimator.RunConfig()\n"
    older = facts(versions=ImageVersions(source="t", tensorflow="2.11"))
    unknown = facts(versions=ImageVersions(source="t"))
    assert rules(run(tmp_path, source, older)) == [("tf-estimator", 2, "info")]
    assert rules(run(tmp_path, source, unknown)) == [("tf-estimator", 2, "warning")]


TF_CONFIG = """\
import json, os
task = json.loads(os.environ.get('TF_CONFIG', '{}')).get('task', {})
if task.get('type') == '%s':
    pass
"""


def test_tf_config_primary_name_both_ways(tmp_path: Path) -> None:
    assert rules(run(tmp_path, TF_CONFIG % "master")) == [("tf-config-primary", 3, "error")]
    assert rules(run(tmp_path, TF_CONFIG % "chief", facts(primary="master", target="ml"))) == [
        ("tf-config-primary", 3, "error")
    ]
    assert rules(run(tmp_path, TF_CONFIG % "chief")) == []
    both = TF_CONFIG % "master" + "elif task.get('type') == 'chief':\n    pass\n"
    assert rules(run(tmp_path, both)) == []
    single = facts(distributed=False, roles=frozenset({"chief"}))
    assert rules(run(tmp_path, TF_CONFIG % "master", single)) == [("tf-config-primary", 3, "warning")]


def test_cluster_keys_the_job_does_not_have(tmp_path: Path) -> None:
    source = "import json, os\ncluster = json.loads(os.environ['TF_CONFIG'])['cluster']\nps = cluster['ps']\n"
    assert rules(run(tmp_path, source)) == [("tf-config-cluster", 3, "error")]
    with_ps = facts(roles=frozenset({"chief", "worker", "ps"}))
    assert rules(run(tmp_path, source, with_ps)) == []
    # .get() without a default returns None where the role is missing; with one it is the fix itself
    assert rules(run(tmp_path, source.replace("['ps']\n", ".get('ps')\n"))) == [
        ("tf-config-cluster", 3, "error")
    ]
    assert rules(run(tmp_path, source.replace("['ps']\n", ".get('ps', [])\n"))) == []


ARGS = "import argparse\np = argparse.ArgumentParser()\np.add_argument('--job-dir'%s)\n"


def test_job_dir_expected_but_not_passed(tmp_path: Path) -> None:
    no_dir = facts(job_dir=False)
    assert rules(run(tmp_path, ARGS % ", required=True", no_dir)) == [("job-dir", 3, "error")]
    assert rules(run(tmp_path, ARGS % ", default='/tmp/out'", no_dir)) == [("job-dir", 3, "warning")]
    assert rules(run(tmp_path, ARGS % "", no_dir)) == []  # the trainer decides what None means
    assert rules(run(tmp_path, ARGS % ", required=True")) == []  # the job passes it


def test_container_job_without_any_output_directory(tmp_path: Path) -> None:
    container = facts(container=True, job_dir=False)
    assert rules(run(tmp_path, "print('hi')\n", container)) == [("aip-model-dir", 1, "info")]
    uses_aip = "import os\nout = os.environ['AIP_MODEL_DIR']\n"
    assert rules(run(tmp_path, uses_aip, container)) == []


HYPERTUNE = """\
import hypertune
TAG = 'accuracy'
hypertune.HyperTune().report_hyperparameter_tuning_metric(hyperparameter_metric_tag=%s, metric_value=1.0)
"""


def test_tuning_metric_reported_or_not(tmp_path: Path) -> None:
    tuning = facts(metric_tag="accuracy")
    assert rules(run(tmp_path, HYPERTUNE % "TAG", tuning)) == []
    assert rules(run(tmp_path, HYPERTUNE % "'loss'", tuning)) == [("hypertune-tag", 3, "error")]
    summaries = "import tensorflow as tf\n\n\ntf.summary.scalar('accuracy', 0.5)\n"
    assert rules(run(tmp_path, summaries, tuning)) == [("hypertune-missing", 4, "error")]
    assert rules(run(tmp_path, "print(1)\n", tuning)) == [("hypertune-missing", 1, "error")]
    assert rules(run(tmp_path, "print(1)\n")) == []  # not a tuning job


def test_requirements_that_clash_with_the_image(tmp_path: Path) -> None:
    setup = """\
    from setuptools import setup
    TF = 'tensorflow==1.15.5'
    setup(name='t', install_requires=[TF, 'keras==2.7.0', 'scikit-learn>=1.0', 'pandas<2', 'requests'])
    """
    found = rules(run(tmp_path, "x = 1\n", setup=setup))
    assert found == [("requirements", 2, "error"), ("requirements", 3, "error"), ("requirements", 3, "error")]
    messages = [f.message for f in run(tmp_path, "x = 1\n", setup=setup)]
    assert "tensorflow==1.15.5" in messages[0] and "keras==2.7.0" in messages[1] and "pandas<2" in messages[2]


def test_pyproject_dependencies(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "t"\ndependencies = [\n  "tensorflow~=2.11.0",\n]\n'
    )
    assert rules(run(tmp_path, "x = 1\n")) == [("requirements", 4, "error")]


def test_summary_line_names_the_errors(tmp_path: Path) -> None:
    package = tmp_path / "trainer"
    package.mkdir()
    (package / "task.py").write_text("import tensorflow as tf\ntf.logging.info('x')\n")
    checkup = check_files({"trainer/task.py": package / "task.py"}, facts())
    assert summary_line(checkup) == (
        "the trainer checkup found 1 error(s) that fail on this job's target: trainer/task.py:2 tf-logging; "
        "run `mlsubmit migrate` with the same flags for the fixes"
    )
    (package / "task.py").write_text("x = 1\n")
    assert summary_line(check_files({"trainer/task.py": package / "task.py"}, facts())) is None


def test_modules_already_read_are_not_read_again(tmp_path: Path) -> None:
    files = {"trainer/task.py": tmp_path / "gone.py", "trainer/big.py": tmp_path / "big.py"}
    (tmp_path / "big.py").write_text("import tensorflow as tf\ntf.gfile.Open('f')\n")
    too_big = b"x = 1\n" * (MAX_MODULE_BYTES // 6 + 1)  # past the bound: read (and judged) from its file
    sources = {
        "trainer/task.py": b"import tensorflow as tf\ntf.logging.info('x')\n",
        "trainer/big.py": too_big,
    }
    found = check_files(files, facts(), sources=sources).findings
    assert [(f.where, f.rule) for f in found] == [
        ("trainer/big.py:2", "tf-gfile"),
        ("trainer/task.py:2", "tf-logging"),
    ]


def test_image_versions_from_the_job() -> None:
    runtime = {"trainingInput": {"runtimeVersion": "2.11"}}
    assert image_versions(runtime) == ImageVersions(
        source="runtimeVersion 2.11", python="3.10", tensorflow="2.11"
    )
    container = {"trainingInput": {"masterConfig": {"imageUri": "gcr.io/p/i:1"}}}
    assert image_versions(container).tensorflow is None
    pool = {
        "pythonPackageSpec": {
            "executorImageUri": "us-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-3.py310:latest"
        }
    }
    versions = image_versions(runtime, {"jobSpec": {"workerPoolSpecs": [pool]}})
    assert versions.packages == {"scikit-learn": "1.3"} and versions.tensorflow is None


def test_job_facts_say_chief_on_vertex_and_list_the_roles() -> None:
    body = {
        "jobId": "j",
        "trainingInput": {
            "scaleTier": "STANDARD_1",
            "runtimeVersion": "1.15",
            "hyperparameters": {"goal": "MAXIMIZE"},
        },
    }
    vertex = job_facts(body, "vertex")
    assert (
        vertex.primary == "chief"
        and vertex.roles == frozenset({"chief", "worker", "ps"})
        and vertex.distributed
    )
    assert vertex.metric_tag == "training/hptuning/metric"
    assert job_facts(body, "ml").primary == "master"  # runtimes before 2.1 said master


@pytest.mark.parametrize(
    "source",
    ["x = " + "+".join(["a"] * 100_000) + "\n", "x = a" + ".b" * 50_000 + "\n", "x = 1\0\n"],
)
def test_hostile_modules_are_reported_not_crashed_on(tmp_path: Path, source: str) -> None:
    assert [f.rule for f in run(tmp_path, source)] == ["py2-syntax"]


def test_the_checkup_stops_when_its_time_is_spent(tmp_path: Path) -> None:
    files = {}
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")
        files[f"trainer/m{i}.py"] = tmp_path / f"m{i}.py"
    ticks = iter([0.0, 0.0, 5.0, 11.0])
    with console.using(Console(clock=lambda: next(ticks))):
        checkup = check_files(files, facts())
    assert checkup.modules == 2
    assert [(f.path, f.rule) for f in checkup.findings] == [("trainer/m2.py", "not-read")]
    assert "this module and 0 more were not read" in checkup.findings[0].message


BUILT = facts(
    versions=ImageVersions(source="tensorflow/tensorflow:2.11.0", tensorflow="2.11", modules=TF_IMAGE_MODULES)
)


@pytest.mark.parametrize(
    ("source", "setup", "expected"),
    [
        ("import pandas as pd\nimport numpy\nimport os\n", None, [("missing-module", 1, "error")]),
        ("import pandas as pd\n", "from setuptools import setup\nsetup(install_requires=['pandas>=1'])\n", []),
        ("from sklearn import svm\n", "from setuptools import setup\nsetup(install_requires=['scikit-learn'])\n", []),
        ("from google.cloud import storage\n", None, [("missing-module", 1, "error")]),
        ("from google.cloud import storage\n", "from setuptools import setup\nsetup(install_requires=['google-cloud-storage'])\n", []),
        ("try:\n    import pandas\nexcept ImportError:\n    pandas = None\n", None, []),
        ("import tensorflow as tf\nimport keras\nfrom absl import flags\nimport six\n", None, []),
        ("from trainer import model\nfrom . import util\n", None, []),
    ],
)  # fmt: skip
def test_modules_nothing_installs(
    tmp_path: Path, source: str, setup: str | None, expected: list[tuple[str, int, str]]
) -> None:
    assert rules(run(tmp_path, source, BUILT, setup=setup)) == expected


def test_nothing_is_missing_where_the_image_is_not_known(tmp_path: Path) -> None:
    assert rules(run(tmp_path, "import pandas\n")) == []


def test_an_implicit_relative_import_in_a_package(tmp_path: Path) -> None:
    package = tmp_path / "trainer"
    package.mkdir()
    for name, text in (("__init__.py", ""), ("util.py", ""), ("task.py", "import util\n")):
        (package / name).write_text(text)
    files = {f"trainer/{p.name}": p for p in package.iterdir()}
    checkup = check_files(files, facts())
    assert rules(list(checkup.findings)) == [("py2", 1, "error")]
    assert checkup.findings[0].fix == "from trainer import util (or from . import util)"
    del files["trainer/__init__.py"]  # a folder of scripts has itself on sys.path: fine
    assert rules(list(check_files(files, facts()).findings)) == []
