"""A one-line upload progress bar the CLI hands to the upload when stderr is a terminal (piped and CI output stays
free of carriage returns)."""

from __future__ import annotations

from typing import TextIO

_MB = 1024 * 1024


class ProgressBar:
    """Draws `name [#####.....]  45%  90.0/200.0 MB` on one line, redrawn only when the percentage moves."""

    def __init__(self, stream: TextIO, width: int = 30) -> None:
        self._stream = stream
        self._width = width
        self._last: tuple[str, int] | None = None

    def __call__(self, uri: str, done: int, total: int) -> None:
        """Report that `done` of `total` bytes of `uri` have been handed to the network."""
        percent = 100 if total <= 0 else min(100, done * 100 // total)
        name = uri.rsplit("/", 1)[-1]
        if self._last == (uri, percent):
            return
        self._last = (uri, percent)
        filled = self._width * percent // 100
        bar = "#" * filled + "." * (self._width - filled)
        line = f"\rUploading {name} [{bar}] {percent:3d}% {done / _MB:.1f}/{total / _MB:.1f} MB"
        self._stream.write(line + ("\n" if percent == 100 else ""))
        self._stream.flush()


def progress_bar_for(stream: TextIO) -> ProgressBar | None:
    """A ProgressBar on `stream` if it is a terminal, else None (no progress output at all)."""
    return ProgressBar(stream) if getattr(stream, "isatty", lambda: False)() else None
