"""Google APIs through an injected http: connection settings and factories, ml v1, Vertex AI, Cloud Storage.

Entry points: ``connection.connect`` (a service client), ``ml.MlJobs``, ``vertex.VertexJobs``,
``storage.upload``.
"""
