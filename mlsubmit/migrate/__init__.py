"""``mlsubmit migrate``: the files a team moving a legacy job to Vertex AI needs, and a checkup of the trainer.

* :mod:`.findings`: what a finding is, and what the checkup knows about the job and its image;
* :mod:`.rules`: the dated tables of APIs removed from TensorFlow, Keras, scikit-learn, pandas and XGBoost;
* :mod:`.scan`: one pass over each module's AST (never imported, never run) with import aliases resolved;
* :mod:`.requirements`: ``setup.py`` / ``pyproject.toml`` requirements against the image;
* :mod:`.checkup`: the checkup of a package tree, bounded in files, bytes and time;
* :mod:`.versions`: which TensorFlow and Python the job's image has;
* :mod:`.migration`: the job spec, the gcloud command line and MIGRATION.md (docs/migrate.md).
"""
