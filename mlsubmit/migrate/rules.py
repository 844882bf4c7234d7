"""The checkup's dated rule tables: APIs removed from (or moved in) the libraries a legacy trainer runs on.

Checked 2026-11-25 against these sources (each row names its own):

* TensorFlow 2.0.0 release notes, https://github.com/tensorflow/tensorflow/releases/tag/v2.0.0 (``tf.contrib``,
  ``tf.app``, ``tf.flags``, ``tf.logging``, ``tf.gfile`` and the graph-mode 1.x API leave the v2 namespace; they
  live on under ``tf.compat.v1``);
* TensorFlow 2.4.0 release notes, https://github.com/tensorflow/tensorflow/releases/tag/v2.4.0
  (``MultiWorkerMirroredStrategy`` stable, ``tf.distribute.experimental.ParameterServerStrategy`` replaced by a new
  TF2 class, ``experimental_distribute_datasets_from_function`` renamed);
* TensorFlow 2.16.1 release notes, https://github.com/tensorflow/tensorflow/releases/tag/v2.16.1 (``tf.estimator``
  removed; Keras 3 is ``tf.keras`` unless ``TF_USE_LEGACY_KERAS=1`` with ``tf-keras`` installed);
* Keras 3 migration guide, https://keras.io/guides/migrating_to_keras_3/ (``lr``, ``*_generator``,
  ``save_format``, TF1 session helpers; checked again 2026-11-27 for what Keras 3 removed or changed beyond them:
  ``DenseFeatures`` and feature columns (https://www.tensorflow.org/guide/migrate/migrating_feature_columns),
  ``keras.experimental``, ``layers.experimental.preprocessing``, ``optimizers.legacy``, the learning-phase
  helpers, ``Metric.reset_states``, the optimizers' ``decay``, ``Lambda`` output-shape inference, saving to a
  path without ``.keras``/``.h5``); each of these was also run on TensorFlow 2.21 / Keras 3.15 that day and
  fails as the table says;
* scikit-learn release notes 0.20 / 0.22 / 0.23 / 0.24 / 1.2, https://scikit-learn.org/stable/whats_new/v0.20.html,
  https://scikit-learn.org/stable/whats_new/v0.22.html, https://scikit-learn.org/stable/whats_new/v0.23.html,
  https://scikit-learn.org/stable/whats_new/v0.24.html, https://scikit-learn.org/stable/whats_new/v1.2.html;
* pandas release notes 1.0.0 / 1.2.0 / 2.0.0, https://pandas.pydata.org/docs/whatsnew/v1.0.0.html,
  https://pandas.pydata.org/docs/whatsnew/v1.2.0.html (``read_gbq``'s ``private_key``/``verbose``, deprecated by
  pandas-gbq 0.8.0), https://pandas.pydata.org/docs/whatsnew/v2.0.0.html; pandas' table of the oldest optional
  dependency it imports (``pandas/compat/_optional.py``: pandas-gbq 0.8.0 for pandas 1.0, 0.17.5 for 2.0, 0.19.0
  for 2.2; checked 2026-11-27);
* XGBoost's deprecation tracker, https://github.com/dmlc/xgboost/issues/3986;
* Vertex AI: the hyperparameter tuning metric (https://cloud.google.com/vertex-ai/docs/training/using-hyperparameter-tuning),
  the environment of custom training (https://cloud.google.com/vertex-ai/docs/training/code-requirements) and the
  end of AI Platform Training (https://cloud.google.com/ai-platform/training/docs).
"""

from __future__ import annotations

from typing import NamedTuple

CHECKED = "2026-11-27"

TF_2_0 = "https://github.com/tensorflow/tensorflow/releases/tag/v2.0.0"
TF_2_4 = "https://github.com/tensorflow/tensorflow/releases/tag/v2.4.0"
TF_2_16 = "https://github.com/tensorflow/tensorflow/releases/tag/v2.16.1"
KERAS_3 = "https://keras.io/guides/migrating_to_keras_3/"
SKLEARN = "https://scikit-learn.org/stable/whats_new/v{}.html"
PANDAS = "https://pandas.pydata.org/docs/whatsnew/v{}.html"
XGBOOST = "https://github.com/dmlc/xgboost/issues/3986"
VERTEX_HPT = "https://cloud.google.com/vertex-ai/docs/training/using-hyperparameter-tuning"
VERTEX_CODE = "https://cloud.google.com/vertex-ai/docs/training/code-requirements"
AI_PLATFORM = "https://cloud.google.com/ai-platform/training/docs"


class ApiRule(NamedTuple):
    """A dotted name (and everything under it) that ``package`` removed (``moved=False``) or renamed in ``version``;
    the image's version judges how bad a use of it is (``apis._finding``)."""

    rule: str
    name: str  # fully qualified: "tensorflow.estimator", after import aliases are resolved
    package: str  # PyPI name whose version decides: tensorflow, scikit-learn, pandas
    version: str
    fix: str
    source: str
    moved: bool = False


def _tf1(name: str) -> ApiRule:
    fix = f"use the TF2 equivalent, or tf.compat.v1.{name} to keep TF1 graph code running"
    return ApiRule("tf1-api", f"tensorflow.{name}", "tensorflow", "2.0", fix, TF_2_0)


def _tf2(rule: str, name: str, fix: str) -> ApiRule:  # a name TensorFlow 2.0 removed
    return ApiRule(rule, name, "tensorflow", "2.0", fix, TF_2_0)


def _keras3(rule: str, name: str, fix: str) -> ApiRule:  # a name Keras 3 (TensorFlow 2.16's Keras) removed
    return ApiRule(rule, name, "tensorflow", "2.16", fix, KERAS_3)


def _tf24(name: str, fix: str, moved: bool = True) -> ApiRule:  # a tf.distribute name 2.4 moved (or remade)
    return ApiRule("tf-distribute-moved", name, "tensorflow", "2.4", fix, TF_2_4, moved)


KERAS_INSTEAD = (
    "rewrite the model with Keras (tf.keras.Model.fit), or run an image with TensorFlow 2.15 or older"
)
ESTIMATOR_NAMES = {  # name -> fix
    "tensorflow.estimator": KERAS_INSTEAD,
    "tensorflow.compat.v1.estimator": KERAS_INSTEAD,
    "tensorflow_estimator": "rewrite the model with Keras; TensorFlow 2.16 no longer installs tensorflow-estimator",
    "tensorflow.keras.estimator": "train the Keras model with Model.fit instead of model_to_estimator",
}

SKLEARN_REMOVED = {  # name -> (the version that removed it, fix)
    "sklearn.externals.joblib": ("0.23", "import joblib (the joblib package) instead"),
    "sklearn.externals.six": ("0.23", "import six, or drop Python 2 support code"),
    "sklearn.cross_validation": ("0.20", "use sklearn.model_selection"),
    "sklearn.grid_search": ("0.20", "use sklearn.model_selection"),
    "sklearn.learning_curve": ("0.20", "use sklearn.model_selection"),
    "sklearn.preprocessing.Imputer": ("0.22", "use sklearn.impute.SimpleImputer"),
    "sklearn.metrics.jaccard_similarity_score": ("0.23", "use sklearn.metrics.jaccard_score"),
    "sklearn.utils.testing": ("0.24", "import the helpers from numpy.testing / pytest"),
    "sklearn.datasets.load_boston": (
        "1.2",
        "use another dataset (fetch_california_housing, or fetch_openml)",
    ),
    "sklearn.metrics.plot_confusion_matrix": ("1.2", "use ConfusionMatrixDisplay.from_estimator"),
    "sklearn.metrics.plot_roc_curve": ("1.2", "use RocCurveDisplay.from_estimator"),
    "sklearn.metrics.plot_precision_recall_curve": ("1.2", "use PrecisionRecallDisplay.from_estimator"),
}

# What Keras 3 (tf.keras from TensorFlow 2.16) removed, by resolved name -> fix. ``tf.feature_column`` itself is
# still in TensorFlow: what breaks is DenseFeatures (the Keras side) or the Estimator (rule tf-estimator).
KERAS3_REMOVED = {
    "tensorflow.keras.layers.DenseFeatures": "feed the model with Keras preprocessing layers "
    "(tf.keras.utils.FeatureSpace, or Normalization/StringLookup/CategoryEncoding per column)",
    "tensorflow.compat.v1.keras.layers.DenseFeatures": "feed the model with Keras preprocessing layers "
    "(tf.keras.utils.FeatureSpace)",
    "tensorflow.keras.experimental": "use the stable names (tf.keras.optimizers.schedules.CosineDecay, ...); "
    "LinearModel / WideDeepModel / SequenceFeatures have no Keras 3 home",
    "keras.experimental": "use the stable names; LinearModel / WideDeepModel have no Keras 3 home",
    "tensorflow.keras.layers.experimental": "the preprocessing layers are tf.keras.layers.* now "
    "(tf.keras.layers.Normalization, ...)",
    "keras.layers.experimental": "the preprocessing layers are keras.layers.* now",
    "tensorflow.keras.optimizers.legacy": "use tf.keras.optimizers.* (Keras 3 raises ImportError for .legacy)",
    "keras.optimizers.legacy": "use keras.optimizers.*",
    "tensorflow.keras.backend.learning_phase": "pass training=True/False to the layer call instead",
    "tensorflow.keras.backend.set_learning_phase": "pass training=True/False to the layer call instead",
    "keras.backend.learning_phase": "pass training=True/False to the layer call instead",
    "keras.backend.set_learning_phase": "pass training=True/False to the layer call instead",
}


# The TF1 names under tf., tf.train., tf.summary. and tf.saved_model. that TensorFlow 2.0 removed.
_TF1_NAMES = "Session InteractiveSession placeholder get_variable variable_scope global_variables_initializer"
_TF1_NAMES += " local_variables_initializer tables_initializer layers python_io"
_TF1_TRAIN = "Saver AdamOptimizer GradientDescentOptimizer AdagradOptimizer FtrlOptimizer RMSPropOptimizer"
_TF1_TRAIN += " MomentumOptimizer ProximalAdagradOptimizer get_or_create_global_step get_global_step"
_TF1_TRAIN += " SessionRunHook MonitoredTrainingSession Supervisor string_input_producer"
_TF1_SUMMARY = "FileWriter merge_all"
_TF1_SAVED_MODEL = "builder signature_def_utils tag_constants signature_constants utils"
_SESSION_FIX = "Keras 3 has no TF1 session: drop it (eager execution)"
_V1_SESSION = ", or tf.compat.v1.keras.backend."
API_RULES: tuple[ApiRule, ...] = (
    *(
        ApiRule("tf-estimator", name, "tensorflow", "2.16", fix, TF_2_16)
        for name, fix in ESTIMATOR_NAMES.items()
    ),
    _tf2(
        "tf-contrib",
        "tensorflow.contrib",
        "tf.contrib has no TF2 home: tf.contrib.layers -> tf.keras.layers, tf.contrib.learn/estimator -> "
        "Keras, tf.contrib.distribute -> tf.distribute, tf.contrib.training.HParams -> plain arguments",
    ),
    _tf2("tf-gfile", "tensorflow.gfile", "use tf.io.gfile (same functions)"),
    _tf2("tf-app-flags", "tensorflow.app", "parse arguments with argparse (or absl.app / absl.flags)"),
    _tf2("tf-app-flags", "tensorflow.flags", "parse arguments with argparse (or absl.flags)"),
    _tf2("tf-logging", "tensorflow.logging", "use Python's logging (or tf.get_logger(), absl.logging)"),
    *(_tf1(name) for name in _TF1_NAMES.split()),
    *(_tf1(f"train.{name}") for name in _TF1_TRAIN.split()),
    *(_tf1(f"summary.{name}") for name in _TF1_SUMMARY.split()),
    *(_tf1(f"saved_model.{name}") for name in _TF1_SAVED_MODEL.split()),
    _tf24(
        "tensorflow.distribute.experimental.MultiWorkerMirroredStrategy",
        "use tf.distribute.MultiWorkerMirroredStrategy (stable since 2.4)",
    ),
    _tf24("tensorflow.distribute.experimental.TPUStrategy", "use tf.distribute.TPUStrategy"),
    _tf24(
        "tensorflow.distribute.experimental.ParameterServerStrategy",
        "this name is a new TF2 class since 2.4: Estimator code needs "
        "tf.compat.v1.distribute.experimental.ParameterServerStrategy; Keras code tf.distribute.ParameterServerStrategy "
        "with a cluster resolver",
        moved=False,
    ),
    _tf2(
        "tf-distribute-moved",
        "tensorflow.contrib.distribute",
        "use tf.distribute (MirroredStrategy, MultiWorkerMirroredStrategy, ParameterServerStrategy)",
    ),
    *(
        _keras3(
            "keras3-session",
            f"{tf}keras.backend.{name}",
            _SESSION_FIX + (f"{_V1_SESSION}{name}" if tf else ""),
        )
        for tf in ("tensorflow.", "")
        for name in ("get_session", "set_session")
    ),
    *(_keras3("keras3-removed", name, fix) for name, fix in KERAS3_REMOVED.items()),
    *(
        ApiRule("sklearn-removed", name, "scikit-learn", version, fix, SKLEARN.format(version))
        for name, (version, fix) in SKLEARN_REMOVED.items()
    ),
    *(
        ApiRule(
            "pandas-removed", f"pandas.{n}", "pandas", "2.0", f"import {m} directly", PANDAS.format("2.0.0")
        )
        for n, m in (("np", "numpy"), ("datetime", "datetime"))
    ),
)

# Keras optimizer classes whose ``lr=`` keyword Keras 3 no longer accepts (``learning_rate=``); matched on the
# resolved name, so torch.optim.SGD(lr=...) and other look-alikes never match.
KERAS_OPTIMIZER_MODULES = ("tensorflow.keras.optimizers.", "keras.optimizers.")
KERAS_LR = _keras3("keras3-lr", "tensorflow.keras.optimizers", "pass learning_rate= instead of lr=")
# Model methods Keras 3 removed: only reported in modules that import Keras (tf.keras or keras).
KERAS_GENERATOR_METHODS = frozenset({"fit_generator", "evaluate_generator", "predict_generator"})
KERAS_GENERATOR = _keras3(
    "keras3-generator",
    "keras.Model.fit_generator",
    "call fit / evaluate / predict, which take generators and datasets",
)
KERAS_SAVE_FORMAT = _keras3(
    "keras3-save-format",
    "keras.Model.save",
    "Keras 3 saves only .keras and .h5 files: model.save('model.keras'), or model.export(DIR) for a SavedModel",
)
DISTRIBUTE_DATASETS_RENAMED = _tf24(
    "tensorflow.distribute.Strategy.experimental_distribute_datasets_from_function",
    "call distribute_datasets_from_function",
)
# Keras 3 changes matched on calls and methods (modules that import Keras or TensorFlow only).
KERAS_LAMBDA = _keras3(
    "keras3-lambda",
    "keras.layers.Lambda",
    "pass output_shape= (Keras 3 cannot infer the output of every function: NotImplementedError at build)",
)
KERAS_SAVE_PATH = _keras3(
    "keras3-removed",
    "keras.Model.save",
    "save to a path ending in .keras (or .h5); for a SavedModel directory call model.export(DIR)",
)
KERAS_RESET_STATES = _keras3("keras3-removed", "keras.metrics.Metric.reset_states", "call reset_state()")
KERAS_DECAY = _keras3(
    "keras3-removed",
    "tensorflow.keras.optimizers",
    "decay= is ignored by Keras 3 optimizers: pass a tf.keras.optimizers.schedules.InverseTimeDecay as "
    "learning_rate",
)
# pandas calls with removed keywords (resolved names) -> (the replacement, the pandas version that removed it), and
# removed methods (modules that import pandas only).
_GBQ_KEY = "credentials=google.oauth2.service_account.Credentials.from_service_account_file(PATH)"
PANDAS_REMOVED_KEYWORDS = {
    ("pandas.read_csv", "error_bad_lines"): ("on_bad_lines='error'|'skip'", "2.0"),
    ("pandas.read_csv", "warn_bad_lines"): ("on_bad_lines='warn'", "2.0"),
    ("pandas.read_table", "error_bad_lines"): ("on_bad_lines='error'|'skip'", "2.0"),
    ("pandas.read_table", "warn_bad_lines"): ("on_bad_lines='warn'", "2.0"),
    ("pandas.read_gbq", "private_key"): (_GBQ_KEY, "1.2"),
    ("pandas.read_gbq", "verbose"): ("the logging module (drop verbose=)", "1.2"),
}
# DataFrame methods with removed keywords, in modules that import pandas: (method, keyword) -> (fix, version).
PANDAS_REMOVED_METHOD_KEYWORDS = {
    ("to_gbq", "private_key"): (_GBQ_KEY, "1.2"),
    ("to_gbq", "verbose"): ("the logging module (drop verbose=)", "1.2"),
}
# The oldest pandas-gbq each pandas imports (pandas/compat/_optional.py), newest first: pandas.read_gbq raises
# ImportError with an older one.
PANDAS_GBQ_MINIMUM = (("2.2", "0.19.0"), ("2.0", "0.17.5"), ("1.0", "0.8.0"))
PANDAS_REMOVED_METHODS = {"as_matrix": ("1.0", "call .to_numpy()"), "ix": ("1.0", "use .loc or .iloc")}
XGBOOST_DEPRECATED_OBJECTIVES = {"reg:linear": "reg:squarederror"}

# The roles a TF_CONFIG cluster may lack (docs/vertex.md: only roles that have replicas are listed).
OPTIONAL_CLUSTER_ROLES = ("ps", "worker", "evaluator")
# Commands absent from Vertex's prebuilt training images and most slim images.
CLOUD_SDK_COMMANDS = frozenset({"gsutil", "gcloud", "bq"})
SUBPROCESS_CALLS = {f"subprocess.{name}" for name in ("call", "check_call", "check_output", "run", "Popen")}
SUBPROCESS_CALLS |= {"os.system", "os.popen", "commands.getoutput", "commands.getstatusoutput"}
# Python 2 builtins (a name not bound in the module) and methods of Python 2 dicts (pandas 2.0 also removed
# Series/DataFrame.iteritems).
PY2_BUILTINS = {"xrange": "range", "unicode": "str", "basestring": "str", "long": "int", "raw_input": "input"}
PY2_BUILTINS |= {"unichr": "chr", "execfile": "exec(open(path).read())", "file": "open"}
PY2_BUILTINS |= {"reduce": "functools.reduce", "cmp": "a key function"}
PY2_METHODS = {"iteritems": ".items()", "itervalues": ".values()", "iterkeys": ".keys()"}
PY2_METHODS |= {"has_key": "the in operator"}
PY2_MODULES = {"urllib2": "urllib.request", "urlparse": "urllib.parse", "cPickle": "pickle"}
PY2_MODULES |= {"StringIO": "io.StringIO", "cStringIO": "io.StringIO / io.BytesIO", "Queue": "queue"}
PY2_MODULES |= {"ConfigParser": "configparser", "commands": "subprocess", "httplib": "http.client"}
