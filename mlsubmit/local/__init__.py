"""The local runner behind ``mlsubmit local train``.

* :mod:`.request`: flags + ``--config`` merged and checked into a :class:`~.request.LocalTrainRequest`;
* :mod:`.cluster`: replicas and loopback ports (pure, plus port probing);
* :mod:`.tfconfig`: each replica's TF_CONFIG (pure);
* :mod:`.venv`: ``--from-package``: the built sdist installed into a cached virtual environment;
* :mod:`.supervisor`: process groups, prefixed output, stop/timeout/signal handling;
* :mod:`.runner`: wires them together (:func:`~.runner.run_local_training`, :func:`~.runner.dry_run`).
"""
