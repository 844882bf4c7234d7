"""Pure translations of a validated ml v1 Job to other engines (Vertex AI CustomJob and HyperparameterTuningJob,
TFJob), their rules, dated tables and costs. Entry point: ``translate.translate``, called once by ``submit.plan``.
"""
