"""The Kubernetes target (docs/kubernetes.md): kubeconfig, exec plugins, a lean API client and the TFJob
backend. Imported only when a command works on a cluster."""
