"""The run ledger (docs/cost.md) end to end against the loopback ml v1 and aiplatform APIs: every submit adds a
manifest line; `jobs rerun` sends a body byte-identical to the original's but for the id and display name;
`jobs describe` records the end and `jobs cost` sums it; concurrent writers and a killed one leave a ledger
every line of which parses (a torn line is skipped with a word); a ledger another user can write is not used."""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from mlsubmit.services import ledger
from tests.fakes.api_server import FakeGoogleApis
from tests.fakes.gcs import BUCKET, GcsEmulator
from tests.fakes.lifecycle_support import parse_json, point_cli_at, run_cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "configs"
PACKAGES = ["--packages", "gs://bkt/pkgs/trainer-0.1.tar.gz", "--module-name", "trainer.task"]
T4 = "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-4\n  masterConfig: {acceleratorConfig: {type: NVIDIA_TESLA_T4, count: 1}}\n"
SUBMITS = {
    "custom_tier (ml)": ["--config", str(EXAMPLES / "custom_tier.yaml"), *PACKAGES],
    "hyperparameters (ml)": ["--config", str(EXAMPLES / "hyperparameters.yaml"), *PACKAGES],
    "container (ml)": ["--config", str(EXAMPLES / "container.yaml")],
    "custom_tier (vertex)": ["--config", str(EXAMPLES / "custom_tier.yaml"), *PACKAGES, "--target", "vertex",
                             "--runtime-version", "2.15", "--python-version", "3.10"],
    "hyperparameters (vertex tuning)": ["--config", str(EXAMPLES / "hyperparameters.yaml"), *PACKAGES,
                                        "--target", "vertex", "--runtime-version", "2.15", "--python-version", "3.10"],
}  # fmt: skip


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch, fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    point_cli_at(monkeypatch, fake_apis)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def ledger_file(tmp_path: Path) -> Path:
    return tmp_path / "state" / "mlsubmit" / "ledger.jsonl"


def created(server: FakeGoogleApis) -> list[dict[str, Any]]:
    return [*server.job_bodies, *server.custom_job_bodies, *server.tuning_job_bodies]


def without_identity(body: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(body))
    out.pop("jobId", None)
    out.pop("displayName", None)
    out.get("labels", {}).pop("mlsubmit_job_id", None)
    return out


@pytest.mark.parametrize("argv", list(SUBMITS.values()), ids=list(SUBMITS))
def test_rerun_sends_the_same_body_but_for_the_id(
    fake_apis: FakeGoogleApis, tmp_path: Path, argv: list[str]
) -> None:
    user_args = [] if "container" in argv[1] else ["--", "--secret-token", "s3cr3t"]
    first = run_cli(
        ["training", "orig_job", "--region", "us-central1", *argv, "--labels", "team=a", *user_args]
    )
    assert first.exit_code == 0, first.stderr
    (line,) = [json.loads(x) for x in ledger_file(tmp_path).read_text().splitlines()]
    (sent,) = created(fake_apis)
    assert line["kind"] == "submit" and line["jobId"] == "orig_job" and line["body"] == sent
    assert line["bodyHash"] == ledger.canonical_hash(sent) and line["mlsubmitVersion"]
    assert "s3cr3t" not in json.dumps(line["argv"]) and line["argv"][:2] == ["mlsubmit", "training"]
    assert line["estimate"]["usdPerHour"] > 0 and line["pricesRead"]
    shown = run_cli(["jobs", "rerun", "orig_job", "again_job", "--dry-run", "--format", "json"])
    assert shown.exit_code == 0, shown.stderr
    assert len(created(fake_apis)) == 1  # a dry run creates nothing
    again = run_cli(["jobs", "rerun", "orig_job", "again_job"])
    assert again.exit_code == 0, again.stderr
    first_body, second_body = created(fake_apis)
    assert parse_json(shown) == second_body
    assert without_identity(second_body) == without_identity(first_body)
    assert json.dumps(without_identity(second_body), sort_keys=True) == json.dumps(
        without_identity(first_body), sort_keys=True
    )
    assert (second_body.get("jobId") or second_body.get("displayName")) == "again_job"
    lines = [json.loads(x) for x in ledger_file(tmp_path).read_text().splitlines()]
    assert lines[-1]["jobId"] == "again_job" and lines[-1]["rerunOf"] == "orig_job", again.stderr


def test_rerun_of_an_unknown_job_is_a_usage_error(fake_apis: FakeGoogleApis) -> None:
    result = run_cli(["jobs", "rerun", "nobody"])
    assert result.exit_code == 2 and "no submit of 'nobody' in the run ledger" in result.stderr
    assert fake_apis.requests == []


def test_describe_records_the_end_and_jobs_cost_sums_it(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    start = dt.datetime(2026, 11, 27, 8, 0, tzinfo=dt.timezone.utc)
    times = iter([start, start, start + dt.timedelta(hours=2)] + [start + dt.timedelta(hours=2)] * 20)
    fake_apis.ml.clock = lambda: next(times)
    fake_apis.script_job("costly", ["RUNNING", "SUCCEEDED"])
    path = tmp_path / "t4.yaml"
    path.write_text(T4 + "  region: us-central1\n")
    assert (
        run_cli(
            ["training", "costly", "--config", str(path), *PACKAGES, "--runtime-version", "2.11"]
        ).exit_code
        == 0
    )
    for _ in range(3):
        assert run_cli(["jobs", "describe", "costly"]).exit_code == 0
    lines = [json.loads(x) for x in ledger_file(tmp_path).read_text().splitlines()]
    ends = [x for x in lines if x["kind"] == "end"]
    assert len(ends) == 1  # recorded once, however often it is described
    assert ends[0]["state"] == "SUCCEEDED" and ends[0]["hours"] == 2 and ends[0]["cost"] == 1.24
    shown = run_cli(["jobs", "cost", "--since", "7d", "--format", "json"])
    assert shown.exit_code == 0, shown.stderr
    report = parse_json(shown)
    assert report["total"] == 1.24 and report["jobs"][0]["jobId"] == "costly"
    assert report["jobs"][0]["upperBound"] == 104.33
    text = run_cli(["jobs", "cost"])
    assert "TOTAL $1.24 over 1 jobs" in text.stdout
    assert parse_json(run_cli(["jobs", "cost", "--label", "team=nobody", "--format", "json"]))["jobs"] == []


WRITER = """
import os, sys
from pathlib import Path
from mlsubmit.services import ledger
path, n = Path(sys.argv[1]), int(sys.argv[2])
for i in range(n):
    ledger.append(path, {"kind": "submit", "jobId": f"w{os.getpid()}_{i}", "body": {"pad": "x" * 20000}})
"""


def test_concurrent_writers_and_a_killed_one_leave_a_ledger_every_line_of_which_parses(
    tmp_path: Path,
) -> None:
    path = ledger_file(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), "15"], env=env) for _ in range(20)]
    victim = subprocess.Popen([sys.executable, "-c", WRITER, str(path), "100000"], env=env)
    deadline = time.monotonic() + 60
    while (not path.exists() or path.stat().st_size < 200_000) and victim.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert all(w.wait(timeout=120) == 0 for w in writers)
    records, notes = ledger.read(path)
    assert notes == []
    assert sum(1 for r in records if not r["jobId"].startswith(f"w{victim.pid}_")) == 20 * 15
    # a writer killed halfway through a line (as a crash between two writes would leave it)
    with path.open("ab") as torn:
        torn.write(b'{"kind": "submit", "jobId": "torn_jo')
    ledger.append(path, {"kind": "submit", "jobId": "after_the_tear"})
    records, notes = ledger.read(path)
    assert records[-1]["jobId"] == "after_the_tear"
    assert len(notes) == 1 and "torn" in notes[0]
    shown = run_cli(["jobs", "cost", "--format", "json"])
    assert shown.exit_code == 0 and "torn" in shown.stderr


def test_a_ledger_another_user_can_write_is_not_used(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    path = ledger_file(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text("")
    path.chmod(0o666)
    config = tmp_path / "t4.yaml"
    config.write_text(T4 + "  region: us-central1\n")
    result = run_cli(
        ["training", "j_untrusted", "--config", str(config), *PACKAGES, "--runtime-version", "2.11"]
    )
    assert result.exit_code == 0, result.stderr  # the job is made all the same
    assert "owned or writable by another user: not trusted" in result.stderr
    assert path.read_text() == ""
    listed = run_cli(["jobs", "cost"])
    assert listed.exit_code != 0 and "not trusted" in listed.stderr and "Traceback" not in listed.output


def test_twenty_concurrent_submits_and_a_killed_one(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    config = tmp_path / "t4.yaml"
    config.write_text(T4 + "  region: us-central1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # the test's own environment: the fake's and XDG_STATE_HOME

    def submit(job: str) -> subprocess.Popen[bytes]:
        argv = ["training", job, "--config", str(config), *PACKAGES, "--runtime-version", "2.11"]
        return subprocess.Popen([sys.executable, "-m", "mlsubmit", *argv], env=env, stderr=subprocess.PIPE)

    runs = {f"conc_{i}": submit(f"conc_{i}") for i in range(20)}
    victim = submit("conc_killed")
    time.sleep(0.3)
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    for job, run in runs.items():
        _out, err = run.communicate(timeout=240)
        assert run.returncode == 0, (job, err.decode())
    records, notes = ledger.read(ledger_file(tmp_path))
    assert notes == []  # every line parses
    submitted = sorted(r["jobId"] for r in records if r["jobId"] != "conc_killed")
    assert submitted == sorted(runs)  # one line per submit, none lost or doubled
    assert all(r["body"] in created(fake_apis) for r in records)


def test_the_manifest_goes_beside_the_staged_package(
    fake_apis: FakeGoogleApis,
    gcs_emulator: GcsEmulator,
    tmp_path: Path,
    trainer: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("MLSUBMIT_NO_GCS_MANIFEST")
    argv = ["training", "staged_job", "--region", "us-central1", "--package-path", str(trainer)]
    argv += [
        "--module-name",
        "trainer.task",
        "--runtime-version",
        "2.11",
        "--staging-bucket",
        f"gs://{BUCKET}",
    ]
    result = run_cli(argv)
    assert result.exit_code == 0, result.stderr
    objects = gcs_emulator.objects()
    manifest = json.loads(objects["staged_job/mlsubmit-manifest-staged_job.json"])
    (line,) = [json.loads(x) for x in ledger_file(tmp_path).read_text().splitlines()]
    assert manifest == json.loads(json.dumps(line)) and manifest["packages"][0]["sha256"]
    assert manifest["git"] is None or set(manifest["git"]) == {"commit", "dirty"}


CORPUS = ROOT / "tests" / "corpus"
CORPUS_FLAGS = ["--module-name", "trainer.task", "--packages", "gs://corpus-bucket/trainer-0.1.tar.gz"]
CORPUS_CASES = {
    name: case
    for name, case in yaml.safe_load((CORPUS / "cases.yaml").read_text(encoding="utf-8")).items()
    if case.get("expect") != "refused"
}


@pytest.mark.parametrize("name", sorted(CORPUS_CASES))
def test_rerun_of_the_corpus_sends_the_same_body(
    fake_apis: FakeGoogleApis, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(CORPUS)
    flags = [str(f) for f in CORPUS_CASES[name].get("flags", CORPUS_FLAGS)]
    first = run_cli(["training", "corpus_job", "--region", "us-central1", "--config", name, *flags])
    assert first.exit_code == 0, first.stderr
    again = run_cli(["jobs", "rerun", "corpus_job", "corpus_again"])
    assert again.exit_code == 0, again.stderr
    first_body, second_body = fake_apis.job_bodies
    assert second_body["jobId"] == "corpus_again"
    assert json.dumps(without_identity(second_body), sort_keys=True) == json.dumps(
        without_identity(first_body), sort_keys=True
    )


def test_jobs_cost_filters_by_time_and_says_what_it_cannot_cost(tmp_path: Path) -> None:
    path = ledger_file(tmp_path)
    old = {"kind": "submit", "jobId": "old_job", "time": "2020-01-01T00:00:00Z", "body": {}, "estimate": {}}
    new = {"kind": "submit", "jobId": "new_job", "time": ledger.now(), "body": {"labels": {"team": "a"}}}
    for record in (old, new):
        ledger.append(path, record)
    shown = parse_json(run_cli(["jobs", "cost", "--since", "7d", "--format", "json"]))
    assert [j["jobId"] for j in shown["jobs"]] == ["new_job"] and shown["notCosted"] == ["new_job"]
    assert shown["total"] == 0
    text = run_cli(["jobs", "cost", "--label", "team=a"])
    assert "new_job" in text.stdout and "old_job" not in text.stdout
    assert "(1 not yet ended or priced)" in text.stdout


def test_a_vertex_job_waited_for_gets_its_end_line(fake_apis: FakeGoogleApis, tmp_path: Path) -> None:
    fake_apis.script_custom_job("vx_costly", ["JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED"])
    argv = ["training", "vx_costly", "--region", "us-central1", *SUBMITS["custom_tier (vertex)"]]
    result = run_cli([*argv, "--wait"])
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(x) for x in ledger_file(tmp_path).read_text().splitlines()]
    assert [x["kind"] for x in lines] == ["submit", "end"]
    assert lines[1]["state"] == "SUCCEEDED" and lines[1]["cost"] is not None
