"""``local train`` relays its replicas' output line by line with their prefix (docs/local.md): a
replica that prints one 64 MiB line costs mlsubmit a bounded amount of memory (the line goes on as 1 MiB lines,
each prefixed), not three copies of it; every byte still arrives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.cli import MLSUBMIT_ROOT
from tests.fakes.trainers import write_trainer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status (Linux)")

LINE_BYTES = 64 << 20
TASK = f"import sys\nsys.stdout.write('x' * {LINE_BYTES} + '\\n')\nsys.stdout.flush()\n"
# The peak of this process's own memory: VmHWM (ru_maxrss would start at the forking test process's size).
PEAK = (
    "import sys\n"
    "from mlsubmit.cli import main\n"
    "try:\n"
    "    main(sys.argv[1:])\n"
    "except SystemExit as exit:\n"
    "    code = exit.code\n"
    "status = open('/proc/self/status').read()\n"
    "print(status.split('VmHWM:')[1].split()[0], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@pytest.mark.timeout(120)
def test_one_64_mib_line_is_relayed_within_120_mb(tmp_path: Path) -> None:
    trainer = write_trainer(tmp_path, TASK)
    out = tmp_path / "stdout"
    with out.open("wb") as sink:
        result = subprocess.run(
            [sys.executable, "-c", PEAK, "local", "train", "--package-path", str(trainer), "--module-name",
             "trainer.task", "--job-dir", str(tmp_path / "job")],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(MLSUBMIT_ROOT)}, stdout=sink,
            stderr=subprocess.PIPE, text=True, timeout=100, check=False,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    peak_kib = int(result.stderr.strip().splitlines()[-1])
    assert peak_kib < 120 * 1000, peak_kib  # 120 MB, the line itself is 67 MB
    relayed = 0
    with out.open("rb") as lines:
        for line in lines:
            assert line.startswith(b"[chief] "), line[:40]
            relayed += len(line) - len(b"[chief] ") - 1
    assert relayed == LINE_BYTES
