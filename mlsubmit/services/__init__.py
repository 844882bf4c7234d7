"""Remote APIs over one lean wire: ``settings.Settings`` (connection and factories), ``retry``, ``poll``, ml v1,
Vertex AI, Cloud Storage, Cloud Build, the preflight's reads and Kubernetes."""
