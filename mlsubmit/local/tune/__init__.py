"""``mlsubmit local tune``: a hyperparameter study run on this machine (docs/local.md).

* :mod:`.space`: the ``hyperparameters`` block as a typed study (pure);
* :mod:`.samplers`: grid, random and Optuna TPE (Bayesian) suggestions;
* :mod:`.metrics`: reading ``cloudml-hypertune``'s metric file; the median early-stopping rule;
* :mod:`.study`: trial records, the study file kept in the job dir, ml v1 ``trainingOutput``;
* :mod:`.trials`: one trial as a supervised local run;
* :mod:`.runner`: :func:`~.runner.prepare_tune` and :func:`~.runner.run_study`.
"""
