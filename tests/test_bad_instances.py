"""The bad-input catalogue (tests/bad_instances): every malformed or infeasible instance gets
its documented exit code and a message naming the field and the expectation — never a traceback.

``expected.yaml`` maps each file to ``{kind, exit, contains}``. Exit-2 files (malformed input)
go through ``placement validate`` and ``placement solve``; exit-3 files (well formed, but no
plan exists) through ``placement solve``, whose JSON plan must carry ``status: infeasible``
and the same sentences in ``diagnosis``.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import typer
import yaml
from click.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.errors import EXIT_INFEASIBLE, EXIT_INPUT

HERE = Path(__file__).parent / "bad_instances"
EXPECTED: dict[str, dict] = yaml.safe_load((HERE / "expected.yaml").read_text(encoding="utf-8"))
# typer.testing.CliRunner rebuilds the click command from the typer app on every invoke (~80 ms);
# build it once and invoke it with click's runner (which typer's subclasses), so the whole
# catalogue runs in seconds.
COMMAND = typer.main.get_command(app)
runner = CliRunner()


def _invoke(*args: str):
    result = runner.invoke(COMMAND, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"uncaught {type(result.exception).__name__}: {result.exception}")
    return result


def _assert_clean(output: str) -> None:
    assert "Traceback" not in output, output
    assert "internal error" not in output, output


def test_catalogue_is_complete_and_covers_every_kind():
    files = {p.name for p in HERE.iterdir() if p.name != "expected.yaml"}
    assert files == set(EXPECTED), (sorted(files - set(EXPECTED)), sorted(set(EXPECTED) - files))
    assert len(files) >= 40
    assert any(f.endswith(".json") for f in files) and any(f.endswith(".yaml") for f in files)
    kinds = Counter(e["kind"] for e in EXPECTED.values())
    for kind in ("syntax", "wrong type", "unknown key", "unknown chip or model", "negative or zero", "NaN or inf",
                 "units mixed up", "dangling reference", "domain larger than the chip allows",
                 "empty fleet or workload", "duplicate names", "absurd sizes", "infeasible (exit 3)"):
        assert kinds[kind] >= 1, kind
    for name, e in EXPECTED.items():
        assert e["exit"] in (EXIT_INPUT, EXIT_INFEASIBLE), name
        assert e["contains"], name


@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e["exit"] == EXIT_INPUT))
def test_malformed_instance_is_an_input_error(name):
    path = str(HERE / name)
    for command in (["validate", path], ["solve", "-q", path]):
        r = _invoke(*command)
        _assert_clean(r.output)
        assert r.exit_code == EXIT_INPUT, (command, r.output)
        assert "error:" in r.output and path in r.output, r.output  # names the file
        for fragment in EXPECTED[name]["contains"]:
            assert fragment in r.output, (fragment, r.output)


@pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e["exit"] == EXIT_INFEASIBLE))
def test_infeasible_instance_is_diagnosed(name, tmp_path):
    path = str(HERE / name)
    r = _invoke("validate", path)  # well formed: only the solve can tell
    assert r.exit_code == 0, r.output
    plan_path = tmp_path / "plan.json"
    r = _invoke("solve", "-q", path, "--json", str(plan_path))
    _assert_clean(r.output)
    assert r.exit_code == EXIT_INFEASIBLE, r.output
    for fragment in EXPECTED[name]["contains"]:
        assert fragment in r.output, (fragment, r.output)
    plan = json.loads(plan_path.read_text(encoding="utf-8"))
    assert plan["status"] == "infeasible"
    assert plan["diagnosis"], plan
    text = "\n".join(plan["diagnosis"])
    for fragment in EXPECTED[name]["contains"]:
        if fragment != "infeasible":
            assert fragment in text, (fragment, plan["diagnosis"])


def test_missing_file_and_directory_are_input_errors(tmp_path):
    for target, words in ((tmp_path / "nowhere.yaml", "cannot read file"), (tmp_path, "expected a file")):
        r = _invoke("solve", "-q", str(target))
        _assert_clean(r.output)
        assert r.exit_code == EXIT_INPUT and words in r.output, r.output


def test_oversized_file_is_refused_before_parsing(tmp_path):
    from placement.core.instance.documents import MAX_FILE_BYTES

    big = tmp_path / "huge.yaml"
    with open(big, "wb") as f:  # sparse: no disk used
        f.truncate(MAX_FILE_BYTES + 1)
    r = _invoke("validate", str(big))
    _assert_clean(r.output)
    assert r.exit_code == EXIT_INPUT and f"expected at most {MAX_FILE_BYTES}" in r.output, r.output


def test_bad_options_are_input_errors():
    path = str(HERE.parent.parent / "instances" / "melange-toy.yaml")
    for option, words in ((["--time-limit", "-1"], "--time-limit"), (["--gap", "1.5"], "--gap"),
                          (["--objective", "speed"], "--objective")):
        r = _invoke("solve", "-q", path, *option)
        _assert_clean(r.output)
        assert r.exit_code == EXIT_INPUT and words in r.output, r.output
