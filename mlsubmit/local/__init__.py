"""The local runner behind ``mlsubmit local train`` (:mod:`.runner`) and ``local tune`` (:mod:`.tune`): the
request, cluster, TF_CONFIG and supervised processes (or containers) of a run on this machine."""
