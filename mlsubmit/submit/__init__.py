"""The submit sequence, owned in one place (docs/architecture.md): :func:`.plan.plan` (the whole plan, offline:
every body, the image, the uploads), :func:`.run.run` (preflight → stage → ensure the image → create, or fail
over), and the failover loop (:mod:`.failover`) with its candidates (:mod:`.candidates`). Import the functions
from their modules (``from mlsubmit.submit.plan import plan``): this package's names are its modules."""
