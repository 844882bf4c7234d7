"""Values with a fixed spelling: durations, API number types, values that become part of a URL. Every pattern
matches the WHOLE value (``re.fullmatch``): ``$`` lets a trailing newline through into object names and URLs."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from decimal import Decimal

# The API's int64, sent as a JSON string (https://developers.google.com/discovery/v1/type-format).
INT64_MAX = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,30}")


def int64_value(value: Any) -> int | None:
    """The count in ``value`` (an int, a whole float or a digit string of at most 30 digits; never a boolean),
    else None; the range is :func:`int64_problem`'s."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return int(value)
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return None


def int64_problem(value: Any, what: str) -> str | None:
    """Why ``value`` does not fit the API's int64, or None (malformed values are the schema's to report)."""
    n = int64_value(value)
    if n is None and isinstance(value, str) and value.isascii() and value.isdigit():
        return f"{what} {value[:40]!r} is larger than the API's int64 limit ({INT64_MAX})"
    if n is not None and n > INT64_MAX:
        return f"{what} {n} is larger than the API's int64 limit ({INT64_MAX})"
    return None


# The API's google.protobuf.Duration in JSON: seconds with up to nine fractional digits and an "s", at most
# 315,576,000,000 s (https://protobuf.dev/reference/protobuf/google.protobuf/#duration).
API_DURATION = re.compile(r"([0-9]{1,12}(?:\.[0-9]{1,9})?)s")
MAX_API_DURATION_S = 315_576_000_000


def api_duration_nanos(text: Any) -> int | None:
    """``"3600.5s"`` -> 3600500000000; None when ``text`` is not an API duration or is out of range (integers
    only: importing ``decimal`` costs a dry run about 1 ms)."""
    if not (m := API_DURATION.fullmatch(text) if isinstance(text, str) else None):
        return None
    whole, _, fraction = m.group(1).partition(".")
    nanos = int(whole) * 10**9 + int(fraction.ljust(9, "0"))
    return nanos if nanos <= MAX_API_DURATION_S * 10**9 else None


def api_duration_seconds(text: Any) -> Decimal | None:
    """``"3600.5s"`` -> Decimal("3600.5"); None when ``text`` is not an API duration or is out of range."""
    if api_duration_nanos(text) is None:
        return None
    from decimal import Decimal

    return Decimal(text[:-1])


def api_duration_problem(text: Any, what: str) -> str | None:
    """Why ``text`` is not an API duration such as ``3600s`` (``what`` names it in the message), or None."""
    if api_duration_nanos(text) is not None:
        return None
    if isinstance(text, str) and API_DURATION.fullmatch(text):
        return f"{what} {text!r} is longer than the API's limit of {MAX_API_DURATION_S}s"
    shown = repr(text[:40]) if isinstance(text, str) else repr(text)
    return f"{what} {shown} is not a duration in seconds such as 3600s (up to nine decimals, then 's')"


# Human durations for mlsubmit's own flags (--timeout 30m): a sum of parts, each a number and a unit (a number
# without one only on its own or last: "90", "1m30").
_NUMBER = r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
_HUMAN = re.compile(rf"(?:{_NUMBER}[smhd])*{_NUMBER}?")
_HUMAN_PART = re.compile(rf"({_NUMBER})([smhd]?)")
_UNIT_SECONDS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_human_duration(text: str) -> float:
    """Seconds in ``30m``, ``2h``, ``3600s``, ``1h30m``, ``1.5h`` or a bare number of seconds. ValueError else."""
    value = text.strip().lower()
    parts = _HUMAN_PART.findall(value) if value and _HUMAN.fullmatch(value) else []
    total = sum(float(number) * _UNIT_SECONDS[unit] for number, unit in parts)
    if not parts or not math.isfinite(total):
        raise ValueError(f"{text[:40]!r} is not a duration; use e.g. 90, 3600s, 30m, 2h or 1h30m")
    return total


def format_duration(seconds: float) -> str:
    """``5400`` -> ``1h30m``; the inverse of :func:`parse_human_duration` for messages."""
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return "".join(parts) or "0s"


# Values that reach a host name or a URL path, checked before anything is built or uploaded: a region becomes part
# of the Vertex AI host name ({region}-aiplatform.googleapis.com), the project and the job id path segments.
JOB_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")
# Project ids (https://cloud.google.com/resource-manager/docs/creating-managing-projects), project numbers and
# legacy domain-scoped ids (example.com:my-project).
PROJECT = re.compile(r"(?:[a-z0-9][a-z0-9.-]{0,61}[a-z0-9]:)?[a-z0-9][a-z0-9-]{0,62}")
REGION = re.compile(r"[a-z]{1,20}(?:-[a-z0-9]{1,20}){1,3}")

URL_VALUES: dict[str, tuple[re.Pattern[str], str]] = {
    "job id": (JOB_ID, "start with a letter, then letters, digits or underscores (at most 128 characters)"),
    "project": (
        PROJECT,
        "use the project id (lowercase letters, digits and '-', like my-project) or the project number",
    ),
    "region": (REGION, "use a region name such as us-central1"),
}


def url_value_problem(kind: str, value: Any) -> str | None:
    """Why ``value`` may not become the ``kind`` ("job id", "project", "region") part of a URL, or None: the one
    check for every value that reaches a host name or a URL path."""
    pattern, hint = URL_VALUES[kind]
    if isinstance(value, str) and pattern.fullmatch(value):
        return None
    shown = repr(value[:40]) if isinstance(value, str) else repr(value)
    return f"{kind} {shown} is invalid: {hint}"
