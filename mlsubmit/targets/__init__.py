"""Pure translations of a validated ml v1 Job to other engines: worker pools, Vertex AI CustomJob, TFJob.

Entry points: ``vertex.to_custom_job``, ``tfjob.to_tfjob``; ``pools.expand_pools`` is shared by both.
"""
