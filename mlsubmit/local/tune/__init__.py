"""``mlsubmit local tune``: a hyperparameter study run on this machine (docs/local.md); :mod:`.runner` wires it."""
