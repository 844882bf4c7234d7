"""The production clients, pointed at a loopback fake: what tests of the services layer call through.

Every call goes through ``services.rest`` on a ``services.wire.Wire``, exactly as a command sends it (docs/ci.md);
only the endpoint and the token are the test's.
"""

from __future__ import annotations

from typing import Any

from mlsubmit.services import rest
from mlsubmit.services.wire import Wire


def production_service(api: str, url: str, token: str = "fake-token") -> Any:
    """The ``services.rest`` Resource of ``api`` (ml, aiplatform, logging, storage) at ``url``, signed with
    ``token``, on a wire of its own."""
    return rest.client(api, url, Wire(deadline=30), lambda: token)
