"""Pure translations of a validated ml v1 Job to other engines: worker pools, Vertex AI CustomJob and
HyperparameterTuningJob, TFJob.

Entry point: ``translate.translate`` (which body a target gets, in which collection, after which rules), called
once by ``submit.plan``; it uses ``vertex.to_custom_job``, ``hptuning.to_hptuning_job`` and ``tfjob.to_tfjob``;
``pools.expand_pools`` is shared by all.
"""
