"""``job.request``: the one builder of a training request, from the command line's values or a Python caller's."""

from __future__ import annotations

import pytest

from mlsubmit.errors import UsageError
from mlsubmit.job.merge import Accelerator
from mlsubmit.job.request import training_request, typed_flags


def test_the_command_line_form_and_the_python_form_make_one_request() -> None:
    """click gives one value per occurrence of a repeated flag; a Python caller gives one mapping or list."""
    env = {"CLOUDSDK_CORE_PROJECT": "p"}
    typed = {
        "labels": ({"team": "a"}, {"run": "1"}),
        "packages": (["gs://b1/x.tar.gz", "gs://b1/y.tar.gz"], ["z.tar.gz"]),
        "worker_accelerator": Accelerator("NVIDIA_TESLA_T4", 1),
        "config": "job.yaml",
    }
    python = typed_flags(
        {
            "labels": {"team": "a", "run": "1"},
            "packages": ["gs://b1/x.tar.gz", "gs://b1/y.tar.gz", "z.tar.gz"],
            "worker_accelerator": {"type": "nvidia-tesla-t4", "count": 1},
            "config": "job.yaml",
        }
    )
    from_cli = training_request("j", typed, user_args=["--x"], env=env)
    from_api = training_request("j", python, user_args=["--x"], env=env)
    assert from_cli.flags.given["labels"] == from_api.flags.given["labels"] == {"team": "a", "run": "1"}
    assert from_cli.packages == from_api.packages == ["gs://b1/x.tar.gz", "gs://b1/y.tar.gz", "z.tar.gz"]
    assert from_cli.flags.given["worker_accelerator"] == from_api.flags.given["worker_accelerator"]
    assert (from_api.config, from_api.staging_layout, from_api.flags.user_args) == (
        "job.yaml",
        "shared",
        ["--x"],
    )


def test_a_flag_left_out_is_absent_not_none() -> None:
    request = training_request(
        "j", typed_flags({"region": None, "module_name": "t.task"}), user_args=None, env={}
    )
    assert dict(request.flags.given) == {"module_name": "t.task"}
    assert request.flags.user_args is None  # no `--`: the file's args stand


@pytest.mark.parametrize(("name", "value"), [("config", 5), ("package_path", b"trainer"), ("packages", 5)])
def test_a_python_callers_value_of_the_wrong_kind_is_a_usage_error(name: str, value: object) -> None:
    with pytest.raises(UsageError, match=rf"flags\['{name}'\]: expected a"):
        typed_flags({name: value})
