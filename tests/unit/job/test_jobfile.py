"""Loading the config file (YAML or JSON Job resource): every problem located, safe YAML, clear failures.

Most cases run the real CLI (`training JOB --dry-run --config FILE`) and assert exit code 2, one ``ERROR:`` line
per problem and the file name (with the line) in each; a few call mlsubmit.job.jobfile directly where that is clearer.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result

from mlsubmit.errors import ConfigFileError, InvalidJobError
from mlsubmit.job import hints
from mlsubmit.job import jobfile as config
from tests.fakes.cli import run_cli
from tests.fakes.rules import CONFIG, JOB_FLAGS  # flags that complete a job: the file's problems are all

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def run(content: str | bytes | None, name: str = CONFIG, flags: tuple[str, ...] = JOB_FLAGS) -> Result:
    """`training my_job --dry-run --format json --config NAME` with ``content`` written to NAME (if given)."""
    if isinstance(content, str):
        Path(name).write_text(content, encoding="utf-8")
    elif isinstance(content, bytes):
        Path(name).write_bytes(content)
    args = ["training", "my_job", "--dry-run", "--format", "json", "--config", name, *flags]
    return run_cli(args)


def errors(result: Result) -> list[str]:
    """The ERROR lines of a refused run, after checking it was refused cleanly."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines and all(line.startswith("ERROR: ") for line in lines), result.stderr
    return lines


def one_error(result: Result) -> str:
    lines = errors(result)
    assert len(lines) == 1, lines
    return lines[0]


def body(result: Result) -> dict[str, Any]:
    assert result.exit_code == 0, result.stderr
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# Unknown keys, hints and line numbers ------------------------------------------------------------------------

# fmt: off
UNKNOWN_KEYS = [
    pytest.param("trainingInput:\n  scaleTeir: BASIC\n", 2, "$.trainingInput.scaleTeir", "did you mean 'scaleTier'?",
                 id="typo"),
    pytest.param("trainingInput:\n  scale_tier: BASIC\n", 2, "$.trainingInput.scale_tier",
                 "did you mean 'scaleTier'?", id="snake-case"),
    pytest.param("trainingInput:\n  ScaleTier: BASIC\n", 2, "$.trainingInput.ScaleTier", "did you mean 'scaleTier'?",
                 id="capitalised"),
    pytest.param("jobid: x\n", 1, "$.jobid", "did you mean 'jobId'?", id="top-level-typo"),
    pytest.param("trainingInput:\n  masterConfig:\n    imageUrl: gcr.io/p/t\n", 3,
                 "$.trainingInput.masterConfig.imageUrl", "did you mean 'imageUri'?", id="nested-replica-config"),
    pytest.param("trainingInput:\n  masterConfig:\n    acceleratorConfig:\n      cout: 1\n", 4,
                 "$.trainingInput.masterConfig.acceleratorConfig.cout", "did you mean 'count'?", id="nested-accelerator"),
    pytest.param("trainingInput:\n  scheduling:\n    maxRuntime: 60s\n", 3, "$.trainingInput.scheduling.maxRuntime",
                 "did you mean 'maxRunningTime'?", id="nested-scheduling"),
    pytest.param("trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n    params:\n    - parameterName: a\n"
                 "      type: CATEGORICAL\n      categoricalValue: [x]\n", 7,
                 "$.trainingInput.hyperparameters.params[0].categoricalValue", "did you mean 'categoricalValues'?",
                 id="in-list-item"),
    pytest.param("trainingInput:\n  zzz: 1\n", 2, "$.trainingInput.zzz", "known keys: args, enableWebAccess",
                 id="no-close-match-lists-keys"),
    pytest.param("color: blue\njobId: j\n", 1, "$.color", "known keys: jobId, kubernetes, labels, maxCost, trainingInput",
                 id="top-level-unknown"),
]
# fmt: on


@pytest.mark.parametrize(("text", "line", "path", "hint"), UNKNOWN_KEYS)
def test_unknown_key_is_refused_with_a_hint(text: str, line: int, path: str, hint: str) -> None:
    # Other problems the unknown key causes (e.g. a missing count) are reported too: all errors at once.
    matching = [e for e in errors(run(text)) if f" {path}: unknown key " in e]
    assert len(matching) == 1, errors(run(text))
    error = matching[0]
    assert error.startswith(f"ERROR: {CONFIG}:{line}: {path}: unknown key ")
    assert hint in error


@pytest.mark.parametrize("key", ["scaleTier", "region", "masterConfig", "workerCount", "args"])
def test_training_input_key_at_top_level_gets_the_wrapper_hint(key: str) -> None:
    value = {"masterConfig": "{imageUri: gcr.io/p/t}", "args": "[--x]", "workerCount": "1"}.get(key, "BASIC")
    text = f"labels:\n  team: ml\n{key}: {value}\n"
    error = one_error(run(text))
    assert error.startswith(f"ERROR: {CONFIG}:3: $.{key}: unknown key '{key}'")
    assert "go under a `trainingInput:` key" in error


# fmt: off
ENUM_HINTS = [
    pytest.param("trainingInput:\n  scaleTier: basic-gpu\n", "$.trainingInput.scaleTier", "'BASIC_GPU'", id="tier"),
    pytest.param("trainingInput:\n  scaleTier: Custom\n", "$.trainingInput.scaleTier", "'CUSTOM'", id="tier-mixed"),
    pytest.param("trainingInput:\n  masterConfig:\n    acceleratorConfig:\n      type: nvidia-tesla-t4\n"
                 "      count: 1\n", "$.trainingInput.masterConfig.acceleratorConfig.type", "'NVIDIA_TESLA_T4'",
                 id="accelerator"),
    pytest.param("trainingInput:\n  hyperparameters:\n    goal: maximize\n    params:\n    - parameterName: a\n"
                 "      type: categorical\n      categoricalValues: [x]\n",
                 "$.trainingInput.hyperparameters.goal", "'MAXIMIZE'", id="goal-and-type"),
]
# fmt: on


@pytest.mark.parametrize(("text", "path", "suggestion"), ENUM_HINTS)
def test_enum_in_the_wrong_case_suggests_the_right_spelling(text: str, path: str, suggestion: str) -> None:
    lines = errors(run(text))
    hits = [line for line in lines if f": {path}: " in line]
    assert hits and f"did you mean {suggestion}?" in hits[0]


def test_enum_without_a_close_value_lists_the_choices() -> None:
    error = one_error(run("trainingInput:\n  scaleTier: HUGE\n"))
    assert "$.trainingInput.scaleTier: 'HUGE' is not one of BASIC, STANDARD_1, PREMIUM_1" in error


def test_every_schema_problem_is_reported_once_with_its_line() -> None:
    text = (
        "jobId: 9lives\n"  # 1
        "labels:\n"  # 2
        "  team: ml\n"  # 3
        "trainingInput:\n"  # 4
        "  scaleTeir: CUSTOM\n"  # 5
        "  workerCount: many\n"  # 6
        "  scheduling:\n"  # 7
        "    priority: 5000\n"  # 8
        "  masterConfig:\n"  # 9
        "    diskConfig:\n"  # 10
        "      bootDiskSizeGb: big\n"  # 11
        "  jobDir: /tmp/out\n"  # 12
    )
    lines = errors(run(text))
    located = [line.split(": ")[1:3] for line in lines]
    assert located == [
        [f"{CONFIG}:1", "$.jobId"],
        [f"{CONFIG}:5", "$.trainingInput.scaleTeir"],
        [f"{CONFIG}:6", "$.trainingInput.workerCount"],
        [f"{CONFIG}:8", "$.trainingInput.scheduling.priority"],
        [f"{CONFIG}:11", "$.trainingInput.masterConfig.diskConfig.bootDiskSizeGb"],
        [f"{CONFIG}:12", "$.trainingInput.jobDir"],
    ]


def test_key_without_a_value_is_refused() -> None:
    lines = errors(run("trainingInput:\n  region: us-central1\n  masterConfig:\n  scheduling:\n"))
    assert lines == [
        f"ERROR: {CONFIG}:3: $.trainingInput.masterConfig: must be object, not empty; give a value or remove the key",
        f"ERROR: {CONFIG}:4: $.trainingInput.scheduling: must be object, not empty; give a value or remove the key",
    ]


def test_type_errors_say_what_was_expected() -> None:
    lines = errors(
        run("trainingInput:\n  enableWebAccess: 'yes'\n  args: [--lr, {a: 1}]\n  masterConfig: []\n")
    )
    assert any("$.trainingInput.enableWebAccess: must be boolean, not str 'yes'" in line for line in lines)
    assert any("$.trainingInput.args[1]: must be string, not a mapping" in line for line in lines)
    assert any("$.trainingInput.masterConfig: must be object, not a list" in line for line in lines)


# Duplicate keys ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "path"),
    [
        (
            "trainingInput:\n  scaleTier: BASIC\n  region: us-east1\n  scaleTier: CUSTOM\n",
            4,
            "$.trainingInput.scaleTier",
        ),
        ("labels:\n  team: a\nlabels:\n  team: b\n", 3, "$.labels"),
        (
            "trainingInput:\n  masterConfig:\n    imageUri: a\n    imageUri: b\n",
            4,
            "$.trainingInput.masterConfig.imageUri",
        ),
        ('{"jobId": "a",\n "jobId": "b"}', 2, "$.jobId"),
    ],
    ids=["training-input", "top-level", "nested", "json"],
)
def test_duplicate_key_is_refused_at_its_second_occurrence(text: str, line: int, path: str) -> None:
    error = one_error(run(text))
    assert error.startswith(f"ERROR: {CONFIG}:{line}: {path}: duplicate key ")


# YAML 1.1 surprises stay what the user wrote -------------------------------------------------------------------


def test_on_off_yes_no_and_dates_stay_strings() -> None:
    text = (
        "labels:\n"
        "  on: off\n"
        "  yes: no\n"
        "  date: 2024-01-31\n"
        "trainingInput:\n"
        "  args: [on, off, yes, n, 2024-01-31, 2001-12-14t21:59:43.10-05:00, '1']\n"
        "  enableWebAccess: true\n"
    )
    job = body(run(text))
    assert job["labels"] == {"on": "off", "yes": "no", "date": "2024-01-31"}
    assert job["trainingInput"]["args"] == [
        "on",
        "off",
        "yes",
        "n",
        "2024-01-31",
        "2001-12-14t21:59:43.10-05:00",
        "1",
    ]
    assert job["trainingInput"]["enableWebAccess"] is True


def test_parse_keeps_yaml_11_words_and_timestamps_as_text() -> None:
    data = config.parse("a: [On, OFF, Yes, no, 2020-02-02]\nb: True\nc: 1.5\n", "x.yaml").data
    assert data == {"a": ["On", "OFF", "Yes", "no", "2020-02-02"], "b": True, "c": 1.5}


def test_merge_keys_are_resolved() -> None:
    text = "x-defaults: &d\n  region: europe-west4\n  scaleTier: BASIC\ntrainingInput:\n  <<: *d\n"
    data = config.parse(text, "x.yaml").data
    assert data["trainingInput"] == {"region": "europe-west4", "scaleTier": "BASIC"}


# Unsafe and hostile YAML ---------------------------------------------------------------------------------------


def billion_laughs(levels: int = 9) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_a_clear_error_and_fast() -> None:
    start = time.perf_counter()
    error = one_error(run(billion_laughs()))
    assert time.perf_counter() - start < 5
    assert error.startswith(f"ERROR: {CONFIG}: ")
    assert "aliases expand past" in error


def test_aliases_within_bounds_are_fine() -> None:
    text = "trainingInput:\n  args: &a [--x, '1']\n  masterConfig:\n    containerArgs: *a\n    imageUri: gcr.io/p/t\n"
    data = config.parse(text, "x.yaml").data
    assert data["trainingInput"]["masterConfig"]["containerArgs"] == ["--x", "1"]


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("a: &a [*a]\n", 1, "alias refers to a value that contains it"),
        ("x: 1\na: &a\n  b: *a\n", 2, "alias refers to a value that contains it"),
        ("trainingInput:\n  args: " + "[" * 200 + "]" * 200 + "\n", 2, "nest deeper than"),
        ("trainingInput:\n  <<: 5\n", 2, "merge key needs a mapping"),
    ],
    ids=["self-alias", "mapping-cycle", "deep-nesting", "bad-merge-key"],
)
def test_cycles_and_deep_nesting_are_clear_errors(text: str, line: int, message: str) -> None:
    error = one_error(run(text))
    assert error.startswith(f"ERROR: {CONFIG}:{line}: ")
    assert message in error


@pytest.mark.parametrize(
    "text",
    [
        "trainingInput:\n  args: [!!python/object/apply:os.system [touch pwned]]\n",
        "trainingInput:\n  region: !!python/name:os.system\n",
        "--- !!python/object/apply:os.system ['touch pwned']\n",
    ],
    ids=["apply-in-list", "name-tag", "document-tag"],
)
def test_python_tags_never_construct_anything(text: str) -> None:
    result = run(text)
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.output
    assert not Path("pwned").exists()


def test_unknown_scalar_tag_is_reported_with_its_line() -> None:
    error = one_error(
        run("trainingInput:\n  region: us-central1\n  pythonModule: !!python/name:os.system x\n")
    )
    assert error.startswith(f"ERROR: {CONFIG}:3: $.trainingInput.pythonModule: unsupported YAML tag")


def test_non_string_mapping_key_is_refused() -> None:
    error = one_error(run("? [a, b]\n: c\n"))
    assert error == f"ERROR: {CONFIG}:1: $: mapping keys must be plain strings"


# Files that cannot be read or parsed ----------------------------------------------------------------------------


def test_non_utf8_file_names_the_line() -> None:
    error = one_error(run(b"trainingInput:\n  region: us-central1\n  pythonModule: caf\xe9\n"))
    assert error.startswith(f"ERROR: {CONFIG}:3: not valid UTF-8")
    assert "save the file as UTF-8" in error


def test_utf8_bom_is_accepted() -> None:
    job = body(run("\ufefftrainingInput:\n  region: europe-west1\n".encode()))
    assert job["trainingInput"]["region"] == "us-central1"  # --region wins over the file


def test_directory_is_refused() -> None:
    Path("conf.d").mkdir()
    assert (
        one_error(run(None, name="conf.d"))
        == "ERROR: conf.d: is a directory, not a regular file; pass a YAML or JSON job config file."
    )


def test_missing_file_is_refused() -> None:
    assert one_error(run(None, name="nope.yaml")) == "ERROR: nope.yaml: no such file; check the path."


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n", "---\n", "~\n", "  \t\n"])
def test_empty_file_is_refused(text: str) -> None:
    error = one_error(run(text))
    assert error.startswith(f"ERROR: {CONFIG}: file is empty")


def test_oversized_file_is_refused_before_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(config, "MAX_CONFIG_BYTES", 100)
    error = one_error(run("trainingInput:\n" + "  # padding\n" * 20))
    assert error == f"ERROR: {CONFIG}: file is 255 bytes; the limit is 100 bytes."


@pytest.mark.parametrize(
    ("text", "kind"),
    [("- region: us-central1\n", "list"), ("just a string\n", "str"), ("42\n", "int"), ("[1, 2]", "list")],
    ids=["yaml-list", "scalar", "number", "json-array"],
)
def test_top_level_must_be_a_mapping(text: str, kind: str) -> None:
    error = one_error(run(text))
    assert error.startswith(f"ERROR: {CONFIG}:1: the top level must be a mapping")
    assert f"not a {kind}" in error


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("trainingInput:\n  region: us-central1\n  args: [--a, --b\n", 4),
        ("trainingInput:\n  region: us-central1\n   scaleTier: BASIC\n", 3),
        ("trainingInput:\n  region: us-central1\n\tscaleTier: BASIC\n", 3),
        ('{\n  "trainingInput": {\n    "region": "us-central1",\n  }\n  "x": 1\n}\n', 5),
        ("trainingInput:\n  region: 'us-central1\n", 3),
    ],
    ids=["unclosed-flow-list", "bad-indent", "tab", "json-missing-comma", "unclosed-quote"],
)
def test_bad_syntax_names_the_line(text: str, line: int) -> None:
    error = one_error(run(text))
    assert error.startswith(f"ERROR: {CONFIG}:{line}: not valid YAML/JSON: ")


# JSON and normalisation ----------------------------------------------------------------------------------------


def test_json_file_gives_the_same_body_as_yaml() -> None:
    doc = {
        "jobId": "ignored",
        "labels": {"team": "ml"},
        "trainingInput": {
            "scaleTier": "CUSTOM",
            "masterType": "n1-standard-8",
            "workerType": "n1-standard-8",
            "workerCount": 2,
            "masterConfig": {"acceleratorConfig": {"type": "NVIDIA_TESLA_T4", "count": 1}},
            "scheduling": {"maxRunningTime": "3600s"},
        },
    }
    from_json = body(run(json.dumps(doc, indent=2), name="job.json"))
    yaml_text = (
        "jobId: ignored\nlabels:\n  team: ml\ntrainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-8\n"
        "  workerType: n1-standard-8\n  workerCount: 2\n  masterConfig:\n    acceleratorConfig:\n"
        "      type: NVIDIA_TESLA_T4\n      count: 1\n  scheduling:\n    maxRunningTime: 3600s\n"
    )
    from_yaml = body(run(yaml_text))
    assert from_json == from_yaml
    assert from_json["jobId"] == "my_job"
    assert from_json["trainingInput"]["workerCount"] == "2"


def test_json_file_errors_have_lines() -> None:
    text = '{\n  "trainingInput": {\n    "region": "us-central1",\n    "scaleTeir": "BASIC"\n  }\n}\n'
    error = one_error(run(text, name="job.json"))
    assert error.startswith(
        "ERROR: job.json:4: $.trainingInput.scaleTeir: unknown key 'scaleTeir'; did you mean"
    )


@pytest.mark.parametrize(
    ("written", "sent"),
    [("2", "2"), ("'2'", "2"), ("2.0", "2"), ("0", "0"), ("'0'", "0")],
    ids=["int", "string", "integral-float", "zero", "zero-string"],
)
def test_int64_counts_are_sent_as_strings(written: str, sent: str) -> None:
    text = (
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-4\n  workerType: n1-standard-4\n"
        f"  workerCount: {written}\n  parameterServerType: n1-standard-4\n  parameterServerCount: {written}\n"
        f"  evaluatorType: n1-standard-4\n  evaluatorCount: {written}\n"
        f"  workerConfig:\n    acceleratorConfig:\n      type: NVIDIA_TESLA_T4\n      count: {written}\n"
    )
    result = run(text)
    if sent == "0":  # a zero accelerator count is refused; the counts alone are fine
        assert "needs a count greater than 0" in one_error(result)
        data = config.check_job_file(CONFIG)[0].data["trainingInput"]
    else:
        data = body(result)["trainingInput"]
    assert [data["workerCount"], data["parameterServerCount"], data["evaluatorCount"]] == [sent] * 3
    assert data["workerConfig"]["acceleratorConfig"]["count"] == sent


def test_non_integral_count_is_refused() -> None:
    error = one_error(run("trainingInput:\n  workerCount: 2.5\n"))
    assert error.startswith(f"ERROR: {CONFIG}:2: $.trainingInput.workerCount: must be integer or string")


def test_count_string_must_be_digits() -> None:
    error = one_error(run("trainingInput:\n  workerCount: two\n"))
    assert error.startswith(f"ERROR: {CONFIG}:2: $.trainingInput.workerCount: 'two' is not valid")


# Direct calls -----------------------------------------------------------------------------------------------


def test_check_job_file_records_the_line_of_every_value(workdir: Path) -> None:
    Path(CONFIG).write_text(
        "labels:\n  team: ml\ntrainingInput:\n  region: us-central1\n  args:\n  - --epochs\n  - '3'\n"
        "  masterConfig:\n    imageUri: gcr.io/p/t\n",
        encoding="utf-8",
    )
    job, problems = config.check_job_file(CONFIG)
    assert problems == []
    assert job.line_of(("labels", "team")) == 2
    assert job.line_of(("trainingInput", "region")) == 4
    assert job.line_of(("trainingInput", "args", 1)) == 7
    assert job.line_of(("trainingInput", "masterConfig", "imageUri")) == 9
    # a missing value is located at its nearest present ancestor
    assert job.line_of(("trainingInput", "masterConfig", "diskConfig", "bootDiskSizeGb")) == 8
    problem = job.problem(("trainingInput", "args", 0), "bad")
    assert str(problem) == f"{CONFIG}:6: $.trainingInput.args[0]: bad"


def test_format_path() -> None:
    assert hints.format_path(()) == "$"
    assert hints.format_path(("trainingInput", "hyperparameters", "params", 2, "minValue")) == (
        "$.trainingInput.hyperparameters.params[2].minValue"
    )


def test_parse_collects_duplicates_as_problems() -> None:
    with pytest.raises(InvalidJobError) as info:
        config.parse("a: 1\na: 2\nb: 1\nb: 2\n", "x.yaml")
    assert [str(p) for p in info.value.problems] == [
        "x.yaml:2: $.a: duplicate key 'a'; keep one",
        "x.yaml:4: $.b: duplicate key 'b'; keep one",
    ]


def test_schema_problems_are_sorted_by_line() -> None:
    job = config.parse("trainingInput:\n  zz: 1\n  scaleTier: nope\nfoo: 1\n", "x.yaml")
    problems = config.schema_problems(job)
    assert [p.line for p in problems] == [2, 3, 4]


def test_check_job_file_errors_are_config_errors() -> None:
    with pytest.raises(ConfigFileError):
        config.check_job_file("missing.yaml")
    Path(CONFIG).write_text("trainingInput: [\n", encoding="utf-8")
    with pytest.raises(ConfigFileError) as info:
        config.check_job_file(CONFIG)
    assert int(info.value.exit_status) == 2


def test_valid_example_configs_load() -> None:
    examples = Path(__file__).resolve().parents[3] / "examples" / "configs"
    files = sorted(examples.glob("*.yaml"))
    assert files, "the examples/configs folder should hold example configs"
    for path in files:
        job, problems = config.check_job_file(str(path))
        assert "trainingInput" in job.data and problems == [], path


# Hostile files: bounded kind, size and depth; nothing of another file echoed ------------------------------------


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "text",
    [
        "trainingInput:\n  args: " + "[" * 50_000 + "]" * 50_000 + "\n",
        "- " * 50_000 + "x\n",
        "{a: " * 50_000 + "1" + "}" * 50_000 + "\n",
    ],
    ids=["flow-lists", "block-lists", "flow-mappings"],
)
def test_50000_deep_nesting_is_refused_without_crashing(text: str, workdir: Path) -> None:
    # A subprocess: the recursive composer would overflow the C stack (exit 139), which no in-process test survives.
    Path("deep.yaml").write_text(text, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mlsubmit", "validate", "deep.yaml"],
        capture_output=True,
        text=True,
        timeout=25,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )
    assert done.returncode == 2, done.stderr[-500:]
    assert done.stderr.startswith("ERROR: deep.yaml:") and "values nest deeper than 64 levels" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.timeout(10)
def test_dev_zero_is_refused_without_reading_it() -> None:
    if not Path("/dev/zero").exists():
        pytest.skip("no /dev/zero")
    error = one_error(run(None, name="/dev/zero"))
    assert error == (
        "ERROR: /dev/zero: is a character device, not a regular file; pass a YAML or JSON job config file."
    )


@pytest.mark.timeout(10)
def test_fifo_is_refused_without_blocking() -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    os.mkfifo("pipe.yaml")
    error = one_error(run(None, name="pipe.yaml"))
    assert (
        error
        == "ERROR: pipe.yaml: is a FIFO (named pipe), not a regular file; pass a YAML or JSON job config file."
    )


@pytest.mark.timeout(10)
def test_a_file_growing_past_the_limit_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlsubmit.proc import files

    Path("big.yaml").write_text("x" * 300, encoding="utf-8")
    # stat says small (like files under /proc); the read itself stops at the bound
    real_fstat = os.fstat
    monkeypatch.setattr(files.os, "fstat", lambda fd: _small(real_fstat(fd)))
    with pytest.raises(ConfigFileError, match=r"^big.yaml: file is larger than 100 bytes"):
        files.read_bounded("big.yaml", max_bytes=100)


def _small(info: os.stat_result) -> os.stat_result:
    values = list(info)
    values[6] = 0  # st_size
    return os.stat_result(values)


SECRET = "ghp_" + "S3cr3tT0k3nValue" * 4


@pytest.mark.timeout(10)
@pytest.mark.parametrize(
    "text",
    [
        f"{SECRET}: 1\nother_line_{SECRET}: 2\n",
        f'{{"type": "service_account", "private_key_id": "{SECRET}", "private_key": "{SECRET}"}}\n',
        f"password: {SECRET}\nuser: admin\n",
        f"trainingInput:\n  region: us-central1\n  {SECRET}: x\n",
        f"trainingInput:\n  region: {SECRET}\n",
        f"trainingInput:\n  scaleTier: {SECRET}\n  masterConfig:\n    imageUri: [{SECRET}]\n",
        f"jobId: j\n{SECRET}: 1\n" + "".join(f"k{i}_{SECRET}: {i}\n" for i in range(30)),
    ],
    ids=[
        "secret-keys",
        "service-account-json",
        "credentials",
        "key-in-job",
        "value",
        "enum-and-type",
        "many-keys",
    ],
)
def test_a_config_symlinked_to_another_file_does_not_echo_its_lines(text: str) -> None:
    Path("secrets.txt").write_text(text, encoding="utf-8")
    Path(CONFIG).symlink_to("secrets.txt")
    lines = errors(run(None))
    assert SECRET not in "\n".join(lines)
    assert SECRET[:33] not in "\n".join(lines)
    assert len(lines) <= 12
    assert all(len(line) < 600 for line in lines)  # the longest: a list of the known keys


def test_a_file_that_shares_no_key_with_a_job_gets_one_line() -> None:
    error = one_error(run("services:\n  web:\n    image: nginx\nversion: '3'\n"))
    assert error == (
        f"ERROR: {CONFIG}:1: $: no top-level key is a Job field (jobId, labels, trainingInput, vertex, maxCost, kubernetes); "
        "is this a job config file?"
    )


def test_long_unknown_key_is_quoted_as_a_short_escaped_prefix() -> None:
    key = "x" * 30 + "\\u001b[31m" + "y" * 100
    error = one_error(run(f'trainingInput:\n  "{key}": 1\n'))
    assert "\x1b" not in error
    assert "'" + "x" * 30 + "\\x1b[" + "'… (135 characters)" in error


# Hints name where a key belongs ---------------------------------------------------------------------------------

# fmt: off
BELONGS = [
    pytest.param("trainingInput:\n  params:\n  - parameterName: lr\n", "$.trainingInput.params",
                 "unknown key 'params' here; it belongs under $.trainingInput.hyperparameters", id="params"),
    pytest.param("trainingInput:\n  hyperparameters:\n    goal: MAXIMIZE\n    params: [{parameterName: a, type: "
                 "CATEGORICAL, categoricalValues: [x]}]\n    scaleType: UNIT_LOG_SCALE\n",
                 "$.trainingInput.hyperparameters.scaleType",
                 "unknown key 'scaleType' here; it belongs under $.trainingInput.hyperparameters.params[] item",
                 id="param-field-on-the-study"),
    pytest.param("trainingInput:\n  imageUri: gcr.io/p/t\n", "$.trainingInput.imageUri",
                 "unknown key 'imageUri' here; it belongs under $.trainingInput.evaluatorConfig, "
                 "$.trainingInput.masterConfig, $.trainingInput.parameterServerConfig or "
                 "$.trainingInput.workerConfig", id="replica-field"),
    pytest.param("trainingInput:\n  maxRunningTime: 3600s\n", "$.trainingInput.maxRunningTime",
                 "it belongs under $.trainingInput.scheduling", id="scheduling-field"),
    pytest.param("trainingInput:\n  masterConfig:\n    bootDiskSizeGb: 100\n",
                 "$.trainingInput.masterConfig.bootDiskSizeGb",
                 "it belongs under $.trainingInput.masterConfig.diskConfig\n", id="disk-field"),
    pytest.param("trainingInput:\n  jobId: j\n", "$.trainingInput.jobId",
                 "unknown key 'jobId' here; it belongs at the top level ($)", id="top-level-field"),
    pytest.param("trainingInput:\n  hyper_parameters: {}\n", "$.trainingInput.hyper_parameters",
                 "did you mean 'hyperparameters'?", id="spelling-still-wins"),
    pytest.param("trainingInput:\n  masterConfig:\n    min_value: 1\n", "$.trainingInput.masterConfig.min_value",
                 "did you mean 'minValue', which belongs under $.trainingInput.hyperparameters.params[] item?",
                 id="folded-elsewhere"),
]
# fmt: on


@pytest.mark.parametrize(("text", "path", "hint"), BELONGS)
def test_unknown_key_hint_names_where_the_key_belongs(text: str, path: str, hint: str) -> None:
    hits = [e for e in errors(run(text)) if f" {path}: " in e]
    assert len(hits) == 1 and hint in hits[0] + "\n", hits
    assert "did you mean 'args'" not in hits[0]


# Every YAML spelling, per field --------------------------------------------------------------------------------


def test_numbers_and_booleans_in_yaml_11_spellings_become_what_the_field_wants() -> None:
    text = (
        "trainingInput:\n"
        "  useChiefInTfConfig: yes\n"
        "  args: [--lr, 1e-5, --mode, 0755, --at, 1:30, --on, on, --date, 2024-01-31, --v, 0.10]\n"
        "  hyperparameters:\n"
        "    goal: MAXIMIZE\n"
        "    enableTrialEarlyStopping: On\n"
        "    maxTrials: '8'\n"
        "    params:\n"
        "    - {parameterName: lr, type: DOUBLE, minValue: 1e-5, maxValue: 1E-2, scaleType: UNIT_LOG_SCALE}\n"
        "    - {parameterName: big, type: DOUBLE, minValue: 50.e9, maxValue: '1e11'}\n"
        "    - {parameterName: neg, type: DOUBLE, minValue: -.5, maxValue: +.5}\n"
        "    - {parameterName: d, type: DISCRETE, discreteValues: [1_000, 0x800, 4e3]}\n"
    )
    ti = body(run(text))["trainingInput"]
    assert ti["useChiefInTfConfig"] is True
    assert ti["args"] == ["--lr", "1e-5", "--mode", "0755", "--at", "1:30", "--on", "on", "--date", "2024-01-31",
                          "--v", "0.10"]  # fmt: skip
    hp = ti["hyperparameters"]
    assert hp["enableTrialEarlyStopping"] is True and hp["maxTrials"] == 8
    assert [(p.get("minValue"), p.get("maxValue")) for p in hp["params"][:3]] == [
        (1e-5, 1e-2),
        (5e10, 1e11),
        (-0.5, 0.5),
    ]
    assert hp["params"][3]["discreteValues"] == [1000, 2048, 4000.0]


def test_octal_and_sexagesimal_numbers_are_taken_as_gcloud_does_with_a_warning() -> None:
    text = (
        "trainingInput:\n  scaleTier: CUSTOM\n  masterType: n1-standard-4\n  workerType: n1-standard-4\n"
        "  workerCount: 010\n  hyperparameters:\n    goal: MINIMIZE\n    params:\n"
        "    - {parameterName: t, type: INTEGER, minValue: 1:30, maxValue: 0755}\n"
    )
    result = run(text)
    ti = body(result)["trainingInput"]
    assert ti["workerCount"] == "8"
    assert ti["hyperparameters"]["params"][0]["minValue"] == 90
    assert ti["hyperparameters"]["params"][0]["maxValue"] == 493
    warnings = [line for line in result.stderr.splitlines() if line.startswith("WARNING: ")]
    assert warnings == [
        f"WARNING: {CONFIG}:5: $.trainingInput.workerCount: 010 is an octal number in YAML 1.1, so it means 8; "
        "write 8 to say so",
        f"WARNING: {CONFIG}:9: $.trainingInput.hyperparameters.params[0].minValue: 1:30 is sexagesimal (base 60) "
        "in YAML 1.1, so it means 90; write 90 to say so",
        f"WARNING: {CONFIG}:9: $.trainingInput.hyperparameters.params[0].maxValue: 0755 is an octal number in "
        "YAML 1.1, so it means 493; write 493 to say so",
    ]


def test_explicit_str_tag_keeps_a_number_as_text() -> None:
    data = config.parse("x: !!str 1e-5\ny: 1e-5\nz: !!float '2'\n", "x.yaml").data
    assert data == {"x": "1e-5", "y": 1e-5, "z": 2.0}


@pytest.mark.parametrize(
    "text",
    [
        "trainingInput: {workerCount: 1e400}\n",
        "trainingInput: {scheduling: {priority: .inf}, evaluatorCount: .nan}\n",
        "trainingInput: {masterConfig: {acceleratorConfig: {type: TPU_V2, count: 1e999}}}\n",
        "trainingInput: {masterConfig: {diskConfig: {bootDiskSizeGb: 1:00:00:00:00:00:00:00:00}}}\n",
        "labels: {d: !!timestamp 2020-01-01}\n",
        "trainingInput: {args: [!!binary aGk=]}\n",
    ],
    ids=["overflow-count", "inf-nan", "overflow-accelerators", "huge-sexagesimal", "tagged-date", "binary"],
)
def test_numbers_out_of_every_range_are_refused_not_crashed_on(text: str) -> None:
    result = run(text)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert any(line.startswith("ERROR: config.yaml:1: $.") for line in result.stderr.splitlines())


def test_pyyaml_loads_with_the_first_config_file_not_before() -> None:
    """A dry run without --config that prints JSON never reads or writes YAML, so it does not pay for importing
    PyYAML (the slowest import of a dry run: benchmarks/bench_dry_run.py); the first file read loads it."""
    probe = (
        "import sys\n"
        "from mlsubmit.cli import main\n"
        "args = ['training', 'j1', '--region', 'us-central1', '--module-name', 'trainer.task',\n"
        "        '--packages', 'gs://bkt/trainer-0.1.tar.gz', '--runtime-version', '2.11', '--dry-run',\n"
        "        '--format', 'json']\n"
        "try:\n    main(args)\nexcept SystemExit as end:\n    assert end.code in (0, None), end.code\n"
        "print('yaml' in sys.modules, file=sys.stderr)\n"
        "from mlsubmit.job.jobfile import parse\n"
        "parse('trainingInput: {}', 'job.yaml')\n"
        "print('yaml' in sys.modules, file=sys.stderr)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.split()[-2:] == ["False", "True"]
