"""Diagnostics on stderr at gcloud's verbosity levels, every access token redacted (docs/security.md); installed
by ``cli.configure_logging`` once logging is loaded (a dry run never logs and does not load it)."""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping


class RedactSecrets(logging.Filter):
    """Never let an access token reach the log, whatever a library decides to log."""

    def __init__(self, secrets: list[str]) -> None:
        super().__init__()
        self.secrets = [s for s in secrets if len(s) >= 8]

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        redacted = text
        for secret in self.secrets:
            redacted = redacted.replace(secret, "<redacted>")
        if "Bearer " in redacted:
            redacted = re.sub(r"Bearer [^\s'\"]+", "Bearer <redacted>", redacted)
        if redacted != text:
            record.msg, record.args = redacted, None
        return True


def install(verbosity: str, env: Mapping[str, str]) -> None:
    """One stderr handler on the root logger: ``LEVEL: message``, tokens redacted, at ``verbosity``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s: %(message)s"))
    handler.addFilter(RedactSecrets([env.get("CLOUDSDK_AUTH_ACCESS_TOKEN", "")]))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.CRITICAL + 1 if verbosity == "none" else getattr(logging, verbosity.upper()))
