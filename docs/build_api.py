"""Write docs/api.md, the library API reference, from the docstrings and signatures of placement's public names.

    python docs/build_api.py            # rewrites docs/api.md (offline: it imports the package, nothing else)
    python docs/build_api.py --check    # fail if docs/api.md is not what this script writes
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import placement
from placement import api

OUT = ROOT / "docs" / "api.md"

#: Sections of the reference, in reading order: (title, public names).
SECTIONS = [
    ("Instances", ["load_instance", "parse_instance", "Instance", "with_changes"]),
    ("Plans", ["solve", "check", "CheckResult", "Plan"]),
    ("Studies", ["capacity", "compare", "sweep", "pareto", "marginal", "kv_prices"]),
    ("Running fleets", ["replan", "Events", "schedule", "read_profile", "Schedule"]),
    ("Deployment and reports", ["deployment", "html_report"]),
    ("Errors", ["PlacementError", "InputError", "SolverError", "VerificationError"]),
]


def _doc(obj) -> str:
    return inspect.cleandoc(obj.__doc__ or "(no docstring)")


def _signature(name: str, obj) -> str:
    if inspect.isclass(obj):
        return f"class placement.{name}"
    sig = str(inspect.signature(obj)).replace("'", "")
    return f"placement.{name}{sig}"


def _entry(name: str) -> list[str]:
    obj = getattr(placement, name)
    doc = _doc(obj)
    if inspect.isclass(obj) and hasattr(obj, "model_fields"):  # a record: its fields, not pydantic's docs
        doc = doc.split("\n\n")[0]
    return [f"### `{name}`", "", "```python", _signature(name, obj), "```", "", doc, ""]


def markdown() -> str:
    lines = ["# Library API reference", "",
             ("Written by `docs/build_api.py` from the docstrings (do not edit by hand). Every function is also "
             "a command; its options are keyword arguments under library names (`--solver` → `backend`, "
             "`--time-limit` → `time_limit_s`, `--set` → `changes`). What only the command does (files it "
             "reads and writes, printing) is listed below; `tests/test_api.py` holds every other option to "
             "its twin."), ""]
    named = {n for _, names in SECTIONS for n in names}
    missing = sorted(set(placement.__all__) - named)
    if missing:
        raise SystemExit(f"public names without a section: {missing}")
    for title, names in SECTIONS:
        lines += [f"## {title}", ""]
        for name in names:
            lines += _entry(name)
    lines += ["## Options only the command line has", "", "| command | option | how a caller does it |",
              "|---|---|---|"]
    for command, only in api.CLI_ONLY.items():
        for option, how in only.items():
            lines.append(f"| {command} | {option} | {how} |")
    lines.append("")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if docs/api.md is not what this script writes")
    text = markdown()
    if ap.parse_args().check:
        current = OUT.read_text() if OUT.exists() else ""
        print("up to date" if current == text else "docs/api.md is stale: run python docs/build_api.py")
        return 0 if current == text else 1
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
