"""The Kubernetes target (``--target kubernetes``): kubeconfig as kubectl reads it, exec credential plugins, a
lean API client over :mod:`mlsubmit.services.wire`, and the TFJob backend (docs/kubernetes.md).

Nothing here is imported unless a command works on a Kubernetes cluster: a dry run or a submit to AI Platform
Training or Vertex AI loads none of it (tests/unit/services/test_kubernetes.py).
"""
