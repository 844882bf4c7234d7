"""cli/output: the upload progress bar, only on a terminal, one line, redrawn only when the percentage moves."""

from __future__ import annotations

import io

from mlsubmit.cli.output import ProgressBar, progress_bar_for


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_no_progress_bar_when_stderr_is_not_a_terminal() -> None:
    assert progress_bar_for(io.StringIO()) is None


def test_progress_bar_on_a_terminal_draws_one_line_ending_at_100_percent() -> None:
    terminal = FakeTerminal()
    bar = progress_bar_for(terminal)
    assert isinstance(bar, ProgressBar)

    mb = 1024 * 1024
    for done in (0, 50 * mb, 50 * mb + 1, 100 * mb):
        bar("gs://b/job/abc/trainer-0.0.0.tar.gz", done, 100 * mb)

    frames = terminal.getvalue().split("\r")[1:]
    assert len(frames) == 3, "a redraw without progress in whole percent is skipped"
    assert frames[1].startswith("Uploading trainer-0.0.0.tar.gz [###############...............]  50%")
    assert frames[-1] == f"Uploading trainer-0.0.0.tar.gz [{'#' * 30}] 100% 100.0/100.0 MB\n"
    assert terminal.getvalue().count("\n") == 1


def test_empty_file_counts_as_complete() -> None:
    terminal = FakeTerminal()
    ProgressBar(terminal)("gs://b/x/empty.tar.gz", 0, 0)

    assert "100%" in terminal.getvalue()
