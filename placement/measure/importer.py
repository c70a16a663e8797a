"""``placement measure import``: result files of the standard clients → one measurements file.

:func:`import_files` reads each file (bounded, JSON or JSON Lines, never
executed), picks its reader (:mod:`placement.measure.formats`, by its keys or
``--format``), and completes every record with what the file does not state
from the ``given`` flags (chip, chips, model, framework, precision, tp, pp, ep,
dp). A flag that contradicts what the file states is an error, not an override;
a field neither states is an error naming the file and the flag that gives it.

Inferred, and said in the point's ``notes``: the catalogue model from the
file's model name; the precision from its suffix (``-FP8``, ``-NVFP4``), else
BF16 (an unquantised checkpoint); ``chips`` = tp·pp·dp (one engine) unless
stated or given.

Examples
--------
>>> import json, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "r.json").write_text(json.dumps({"model_id": "meta-llama/Llama-3.1-8B-Instruct", "completed": 8,
...     "total_input_tokens": 8192, "total_output_tokens": 1024, "max_concurrency": 8, "request_rate": "inf",
...     "request_throughput": 3.1, "output_throughput": 400.0, "mean_ttft_ms": 90.0, "mean_tpot_ms": 9.5}))
>>> m = import_files([d / "r.json"], {"chip": "h100", "framework": "vllm"})
>>> p = m.points[0]
>>> p.chip, p.chips, p.model, p.precision, p.concurrency, m.sources[0].format
('h100', 1, 'llama-3.1-8b', 'bf16', 8.0, 'vllm')
>>> import_files([d / "r.json"], {})
Traceback (most recent call last):
...
placement.core.instance.errors.InputError: ...r.json: chip: the file does not state the hardware; give --chip (a catalogue chip, e.g. h100)
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from costmodels.measured_rows import catalogue_model_name
from placement.core.instance.documents import input_error_of, read_text
from placement.core.instance.errors import InputError
from placement.core.instance.loading import model_aliases
from placement.measure.formats import FORMATS, detect_format
from placement.measure.points import MeasuredPoint, Measurements, SourceFile

__all__ = ["ARCHITECTURE_TWINS", "GIVEN_FIELDS", "catalogue_name", "import_files", "read_result_file"]

#: What a flag may give (``--chip`` → ``chip``…), and the type each takes.
GIVEN_FIELDS: dict[str, type] = {"chip": str, "chips": int, "model": str, "framework": str, "precision": str,
                                 "tp": int, "pp": int, "ep": int, "dp": int}
_PRECISION_SUFFIXES = (("nvfp4", "fp4"), ("mxfp4", "fp4"), ("fp4", "fp4"), ("fp8", "fp8"), ("bf16", "bf16"))


def read_result_file(path: str | Path) -> tuple[Any, bytes, bool]:
    """(parsed document, raw bytes, is JSON Lines) of a result file; JSON Lines by suffix or by content."""
    p = Path(path)
    text, raw = read_text(p)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise InputError("the file is empty; expected a benchmark result (JSON or JSON Lines)", file=str(p))
    try:
        if p.suffix.lower() == ".jsonl" or (len(lines) > 1 and lines[0].lstrip().startswith("{")
                                             and lines[0].rstrip().endswith("}")):
            try:
                return [json.loads(ln) for ln in lines], raw, True
            except json.JSONDecodeError:
                if p.suffix.lower() == ".jsonl":
                    raise
        return json.loads(text), raw, False
    except json.JSONDecodeError as e:
        raise InputError(f"invalid JSON at line {e.lineno} column {e.colno}: {e.msg}", file=str(p)) from None


#: Checkpoint names of the same architecture as a catalogue model (the roofline prices layers, not weights).
ARCHITECTURE_TWINS: dict[str, tuple[str, str]] = {
    "llama-3.3-70b": ("llama-3.1-70b", "Llama 3.3 70B has Llama 3.1 70B's architecture"),
    "llama3-8b": ("llama-3.1-8b", "Llama 3 8B has Llama 3.1 8B's layers (its context is shorter)"),
    "llama-3-8b": ("llama-3.1-8b", "Llama 3 8B has Llama 3.1 8B's layers (its context is shorter)"),
    "deepseek-r1": ("deepseek-v3", "DeepSeek-R1 is a DeepSeek-V3 architecture (DeepseekV3ForCausalLM)"),
}
_NAME_SUFFIXES = ("-instruct", "-fp8", "-kv", "-nvfp4", "-fp4", "-dynamic", "-0528", "-v2", "-hf", "-chat")


def catalogue_name(name: str) -> tuple[str | None, str]:
    """(catalogue model or None, why) for a checkpoint name: the catalogue's names and Hugging Face ids,
    then the name without its organisation, ``meta-`` prefix and quantisation/date suffixes, then
    :data:`ARCHITECTURE_TWINS`.

    Examples
    --------
    >>> catalogue_name("amd/Llama-3.3-70B-Instruct-FP8-KV")[0], catalogue_name("neuralmagic/Meta-Llama-3.1-8B-FP8")[0]
    ('llama-3.1-70b', 'llama-3.1-8b')
    >>> catalogue_name("Qwen/Qwen3-0.6B")[0] is None
    True
    """
    if found := model_aliases().get(name.lower()) or catalogue_model_name(name):
        return found, f"{name} → catalogue {found}"
    n = name.rstrip("/").split("/")[-1].lower().removeprefix("meta-")
    while (cut := next((x for x in _NAME_SUFFIXES if n.endswith(x)), None)) is not None:
        n = n[: -len(cut)]
    if n in model_aliases():
        return model_aliases()[n], f"{name} → catalogue {model_aliases()[n]}"
    if n in ARCHITECTURE_TWINS:
        twin, why = ARCHITECTURE_TWINS[n]
        return twin, f"{name} → catalogue {twin} ({why})"
    return None, ""


def _model(stated: str, given: str | None, path: str) -> tuple[str, str]:
    """(catalogue model, note): the flag's, else the file's name mapped to the catalogue."""
    if given is not None:
        name = catalogue_name(given)[0]
        if name is None:
            raise InputError(f"unknown model {given!r}; expected a catalogue model (placement catalog)",
                             field="--model")
        return name, f"model: {name} (--model)"
    if not stated:
        raise InputError("the file does not name the model; give --model", file=path, field="model")
    name, why = catalogue_name(stated)
    if name is None:
        raise InputError(f"the model {stated!r} is not in the catalogue; give --model (a catalogue model) if it is "
                         "one under another name", file=path, field="model")
    return name, f"model: {why}"


def _precision(model_id: str, given: str | None) -> tuple[str, str]:
    if given is not None:
        if given not in ("bf16", "fp8", "fp4", "int4"):
            raise InputError(f"expected bf16, fp8 or fp4, got {given!r}", field="--precision")
        return given, f"precision: {given} (--precision)"
    low = model_id.lower()
    for suffix, prec in _PRECISION_SUFFIXES:
        if low.endswith(suffix) or f"-{suffix}-" in low:
            return prec, f"precision: {prec}, from the model name {model_id!r}"
    return "bf16", "precision: bf16 assumed (an unquantised checkpoint; give --precision otherwise)"


def _complete(rec: dict, given: dict, path: str) -> dict:
    """A reader's record with the flags' values and the inferences (module docstring)."""
    rec = dict(rec)
    notes = list(rec.pop("notes", []))
    for key, value in given.items():
        if value is None or key in ("model", "precision"):
            continue
        if key in rec and rec[key] is not None and rec[key] != value:
            raise InputError(f"the file states {key} = {rec[key]!r}, --{key} says {value!r}", file=path, field=key)
        if rec.get(key) is None:
            notes.append(f"{key}: {value} (--{key}; the file does not state it)")
        rec[key] = value
    if rec.get("chip") is None:
        raise InputError("the file does not state the hardware; give --chip (a catalogue chip, e.g. h100)",
                         file=path, field="chip")
    if rec.get("framework") is None:
        raise InputError("the file does not state the serving framework; give --framework (vllm, sglang, trtllm)",
                         file=path, field="framework")
    stated_model = str(rec.get("model_id") or "")
    rec["model"], why = _model(stated_model, given.get("model"), path)
    notes.append(why)
    stated_prec = rec.pop("precision", None)
    rec["precision"], why = (stated_prec, f"precision: {stated_prec} (stated)") if stated_prec and not given.get(
        "precision") else _precision(stated_model, given.get("precision"))
    notes.append(why)
    for key in ("tp", "pp", "ep", "dp"):
        rec.setdefault(key, 1)
    if rec.get("chips") is None:
        rec["chips"] = rec["tp"] * rec["pp"] * rec["dp"]
        notes.append(f"chips: {rec['chips']} = tp·pp·dp, one engine (give --chips for more replicas)")
    rec["notes"] = notes
    return rec


def import_files(paths: list[str | Path], given: dict[str, Any], fmt: str | None = None) -> Measurements:
    """Import result files (module docstring); every point keeps its file's name, format and SHA-256.

    Raises
    ------
    InputError
        A file that cannot be read, is of no known format, lacks a field, or contradicts a flag.
    """
    unknown = sorted(set(given) - set(GIVEN_FIELDS))
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r}; expected one of {', '.join(GIVEN_FIELDS)}")
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", field="--format")
    points: list[MeasuredPoint] = []
    sources: list[SourceFile] = []
    for path in paths:
        doc, raw, jsonl = read_result_file(path)
        name = detect_format(doc, str(path), jsonl) if fmt is None else fmt
        digest = hashlib.sha256(raw).hexdigest()
        recs = FORMATS[name](doc, str(path))
        for rec in recs:
            full = _complete(rec, given, str(path))
            try:
                points.append(MeasuredPoint.model_validate(
                    {**full, "source": Path(path).name, "format": name, "sha256": digest}))
            except ValidationError as e:
                raise input_error_of(e, str(path)) from None
        sources.append(SourceFile(path=Path(path).name, format=name, sha256=digest, points=len(recs)))
    if not points:
        raise InputError("no measured points in the files given")
    return Measurements(sources=sources, points=points)
