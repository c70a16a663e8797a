"""Copy the fitted factors of ``benchmarks/calibration_results.json`` into the catalogues: the chips'
(``topology/catalog/chips.yaml``) and the serving frameworks' TTFT latencies (``costmodels/catalog/frameworks.yaml``).

``benchmarks/calibrate.py`` only reports; this script is the one step that changes the catalogue, so
that the values the plans use are exactly the fit's (rounded to 3-4 significant digits) and each
chip's ``[fit]`` source line states the fit's current errors. It edits the YAML text in place, chip
block by chip block, keeping every comment; a factor line a chip lacks is added after
``step_overhead_s`` with its source pointing at the chip's ``[fit]`` anchor — unless the fit left it at
its starting value (a factor the chip's data cannot see: the chip keeps the code's prior). GB200's fit is reported,
not adopted (:data:`benchmarks.calibrate.FAMILIES`); GB200, B300 and GB300 take B200's fitted factors as their
prior instead (:data:`SIBLINGS`).

Run after ``python benchmarks/calibrate.py``::

    .venv/bin/python benchmarks/adopt_calibration.py          # writes topology/catalog/chips.yaml
    .venv/bin/python benchmarks/adopt_calibration.py --check  # exit 1 if the catalogue differs from the JSON
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
JSON_PATH = ROOT / "benchmarks" / "calibration_results.json"
CATALOG = ROOT / "topology" / "catalog" / "chips.yaml"
FRAMEWORKS = ROOT / "costmodels" / "catalog" / "frameworks.yaml"
#: Fitted chips whose fit is not adopted (their catalogue record stays uncalibrated).
NOT_ADOPTED = {"gb200"}
#: Factor -> significant digits written.
DIGITS = {"compute_efficiency": 3, "memory_efficiency": 3, "step_overhead_s": 3, "memory_half_bytes": 3,
          "compute_half_tokens": 4, "layer_overhead_s": 3, "allreduce_efficiency": 3, "sequence_overhead_s": 3,
          "kv_memory_efficiency": 3}
#: Factors whose line may be absent from a chip block (added when the fit gives them a value).
OPTIONAL = ("memory_half_bytes", "compute_half_tokens", "layer_overhead_s", "allreduce_efficiency",
            "sequence_overhead_s", "kv_memory_efficiency")
#: Factors whose fitted value means "unset" (the chip's field then falls back: η_kv to η_m).
UNSET_AT = {"kv_memory_efficiency": 0.0}
#: Factors that keep their default (and need no source) at these values.
DEFAULTS = {"memory_half_bytes": 0.0, "compute_half_tokens": 0.0, "layer_overhead_s": 0.0,
            "allreduce_efficiency": 1.0, "kv_memory_efficiency": 0.0}


def _fmt(value: float, digits: int) -> str:
    if value == 0:
        return "0.0"
    text = f"{value:.{digits}g}"
    return text if ("e" in text or "." in text) else f"{text}.0"


def _block(text: str, chip: str) -> tuple[int, int]:
    start = text.index(f"\n- name: {chip}\n") + 1
    nxt = text.find("\n- name: ", start + 1)
    return start, (len(text) if nxt < 0 else nxt + 1)


def _errors(results: dict, chip: str) -> dict[tuple[str, str], float]:
    return {(r["metric"], r["split"]): r["median"] for r in results["chips"] if r["group"] == chip}


def _source_numbers(line: str, fit: dict, errors: dict) -> str:
    """The ``[fit]`` source line with its error figures refreshed."""
    tpot = (errors.get(("TPOT", "leave-one-source-out")), errors.get(("TPOT", "leave-one-model-out")))
    line = re.sub(r"median \|TPOT error\| \d+ % -> \d+ % in sample",
                  f"median |TPOT error| {fit['tpot_default']['median']:.0f} % -> {fit['tpot_in-sample']['median']:.0f} % in sample", line)
    if tpot[0] is not None:
        line = re.sub(r"held-out median \|TPOT error\| \d+ % leave-one-source-out",
                      f"held-out median |TPOT error| {tpot[0]:.0f} % leave-one-source-out", line)
    if tpot[1] is not None:
        line = re.sub(r"leave-one-source-out, \d+ % leave-one-model-out",
                      f"leave-one-source-out, {tpot[1]:.0f} % leave-one-model-out", line)
    return line


def adopt(text: str, results: dict) -> str:
    for fit in results["fits"]:
        chip = fit["chip"]
        if chip in NOT_ADOPTED or f"\n- name: {chip}\n" not in text:
            continue
        start, end = _block(text, chip)
        block = text[start:end]
        anchor = re.search(r"&(fit_[a-z0-9_]+) \"(\[fit\][^\"]*)\"", block)
        for name, value in fit["fitted"].items():
            if name not in DIGITS:
                continue
            line = f"  {name}: {_fmt(value, DIGITS[name])}\n"
            pattern = re.compile(rf"^  {name}: .*\n", re.MULTILINE)
            if name in UNSET_AT and value == UNSET_AT[name]:  # the fit left the field to its fallback: no line
                block = pattern.sub("", block, count=1)
                block = re.sub(rf"^    {name}: \*fit_[a-z0-9_]+\n", "", block, count=1, flags=re.MULTILINE)
                continue
            if pattern.search(block):
                block = pattern.sub(line, block, count=1)
            elif name in OPTIONAL and value != DEFAULTS.get(name, None) and value != fit["default"].get(name, None):
                at = re.search(r"^  step_overhead_s: .*\n", block, re.MULTILINE).end()
                block = block[:at] + line + block[at:]
            else:
                continue
            needs_source = value != DEFAULTS.get(name, None)
            if needs_source and anchor is not None and not re.search(rf"^    {name}: ", block, re.MULTILINE):
                at = block.index("\n", block.index(anchor.group(0))) + 1  # an alias follows its anchor
                block = block[:at] + f"    {name}: *{anchor.group(1)}\n" + block[at:]
        if anchor is not None:
            old = anchor.group(2)
            block = block.replace(old, _source_numbers(old, fit, _errors(results, chip)))
        if "batch_per_rank" in fit:  # the batches the fit saw: plans beyond them say they extrapolate
            lo, hi = fit["batch_per_rank"]
            block = _set_field(block, "calibrated_batch_per_rank", f"[{_fmt(lo, 4)}, {_fmt(hi, 4)}]",
                               after="heldout_tpot_error")
        if "pipeline_stages" in fit:  # the most pipeline stages the fit saw: plans with more say so
            block = _set_field(block, "calibrated_pipeline_stages", str(fit["pipeline_stages"]),
                               after="calibrated_batch_per_rank")
        split = _errors(results, chip)
        held = [split[k] for k in (("TPOT", "leave-one-source-out"), ("TPOT", "leave-one-model-out"))
                if split.get(k) is not None]
        heldout = max(held) if held else None  # the worse of the two held-out medians
        if heldout is not None:
            block = re.sub(r"^  heldout_tpot_error: .*\n", f"  heldout_tpot_error: {heldout / 100:.2f}\n", block,
                           count=1, flags=re.MULTILINE)
        text = text[:start] + block + text[end:]
    return text


def _set_field(block: str, name: str, value: str, after: str) -> str:
    """``block`` (one chip's YAML) with ``name: value`` replacing its line, or inserted after ``after``'s."""
    line = f"  {name}: {value}\n"
    pattern = re.compile(rf"^  {name}: .*\n", re.MULTILINE)
    if pattern.search(block):
        return pattern.sub(line, block, count=1)
    at = re.search(rf"^  {after}: .*\n", block, re.MULTILINE).end()
    return block[:at] + line + block[at:]


#: Uncalibrated chips that take a calibrated sibling's fitted factors as their prior: the same tensor cores,
#: HBM generation, NVLink generation and serving software (GB200 is the B200 die beside a Grace CPU; B300 and
#: GB300 are Blackwell Ultra, the same architecture with more FP4 throughput and memory). They stay
#: ``uncalibrated`` (their band is the uncalibrated one) and list the factors among their estimates.
SIBLINGS = {"gb200": "b200", "b300": "b200", "gb300": "b200"}
#: The factors a sibling takes.
SIBLING_FACTORS = ("compute_efficiency", "memory_efficiency", "kv_memory_efficiency", "step_overhead_s",
                   "sequence_overhead_s", "memory_half_bytes", "compute_half_tokens", "layer_overhead_s",
                   "allreduce_efficiency")


def _sibling_source(parent: str) -> str:
    return (f"[prior] estimate: {parent}'s fitted factor (benchmarks/calibration_results.json, "
            "benchmarks/adopt_calibration.py SIBLINGS): the same Blackwell tensor cores, HBM3e, NVLink 5 and serving "
            "software; not measured on this chip")


def adopt_siblings(text: str, results: dict) -> str:
    """Each :data:`SIBLINGS` chip with its parent's fitted factors, sourced as a prior and listed as estimates, and
    the pipeline stages its parent's fit measured (``calibrated_pipeline_stages``: plans are held to them)."""
    fits = {f["chip"]: f["fitted"] for f in results["fits"]}
    stages = {f["chip"]: f.get("pipeline_stages") for f in results["fits"]}
    for chip, parent in SIBLINGS.items():
        if f"\n- name: {chip}\n" not in text or parent not in fits:
            continue
        start, end = _block(text, chip)
        block = text[start:end]
        for name in SIBLING_FACTORS:
            value = fits[parent].get(name)
            line_re = re.compile(rf"^  {name}: .*\n", re.MULTILINE)
            source_re = re.compile(rf"^    {name}: .*\n", re.MULTILINE)
            if value is None or (name in UNSET_AT and value == UNSET_AT[name]) or value == DEFAULTS.get(name):
                block = source_re.sub("", line_re.sub("", block, count=1), count=1)
                continue
            line = f"  {name}: {_fmt(value, DIGITS[name])}\n"
            if line_re.search(block):
                block = line_re.sub(line, block, count=1)
            else:
                at = re.search(r"^  step_overhead_s: .*\n", block, re.MULTILINE).end()
                block = block[:at] + line + block[at:]
            source = f'    {name}: "{_sibling_source(parent)}"\n'
            if source_re.search(block):
                block = source_re.sub(source, block, count=1)
            else:
                at = block.index("  sources:\n") + len("  sources:\n")
                block = block[:at] + source + block[at:]
        if stages.get(parent) is not None:  # the stages the parent's factors were measured at bound the plans too
            block = _set_field(block, "calibrated_pipeline_stages", str(stages[parent]), after="step_overhead_s")
        listed = re.search(r"^  estimates: \[(.*)\]\n", block, re.MULTILINE)
        names = [n.strip() for n in listed.group(1).split(",") if n.strip()]
        present = [n for n in SIBLING_FACTORS if re.search(rf"^  {n}: ", block, re.MULTILINE)]
        names += [n for n in present if n not in names]
        block = block[:listed.start()] + f"  estimates: [{', '.join(names)}]\n" + block[listed.end():]
        text = text[:start] + block + text[end:]
    return text


def adopt_frameworks(text: str, results: dict) -> str:
    """``frameworks.yaml`` with each fitted framework's TTFT request latency (to the millisecond), row count
    and per-chip median of measured − prefill TTFT (ms)."""
    for name, fit in results["ttft_frameworks"].items():
        start = text.index(f"\n  {name}:\n") + 1
        nxt = re.search(r"^  [a-z]+:\n", text[start + 1:], re.MULTILINE)
        end = len(text) if nxt is None else start + 1 + nxt.start()
        block = re.sub(r"^    ttft_request_latency_s: .*$", f"    ttft_request_latency_s: {fit['ttft_request_latency_s']:.3f}",
                       text[start:end], count=1, flags=re.MULTILINE)
        block = re.sub(r"\{rows: \d+,", f"{{rows: {fit['rows']},", block, count=1)
        medians = ", ".join(f"{chip}: {1e3 * v:.0f}"
                            for chip, v in sorted(fit["measured_minus_prefill_s_median_per_chip"].items()))
        block = re.sub(r"measured_minus_prefill_ms_median_per_chip: \{[^}]*\}",
                       f"measured_minus_prefill_ms_median_per_chip: {{{medians}}}", block, count=1)
        text = text[:start] + block + text[end:]
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args(argv)
    results = json.loads(JSON_PATH.read_text())
    changed = []
    for path, update in ((CATALOG, lambda t, r: adopt_siblings(adopt(t, r), r)), (FRAMEWORKS, adopt_frameworks)):
        old = path.read_text()
        new = update(old, results)
        if new != old:
            changed.append(path)
            if not a.check:
                path.write_text(new)
    if a.check and changed:
        print(f"{', '.join(str(p.relative_to(ROOT)) for p in changed)} differ from benchmarks/calibration_results.json; "
              "run benchmarks/adopt_calibration.py")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
