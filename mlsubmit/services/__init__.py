"""Google APIs through an injected http: connection settings and factories, one retry engine, ml v1, Vertex AI,
Cloud Storage.

Entry points: ``settings.Settings`` (a plan or flags, and the environment -> ``jobs_backend()``, ``storage()``,
``logging()``), ``backends.JobsBackend`` (``create``, ``get``, ``list``, ``cancel``),
``retry`` (``RetryPolicy``, ``call``, ``is_transient``), ``compare.is_same_job``, ``ml.MlJobs``,
``vertex.VertexJobs``, ``storage.upload``.
"""
