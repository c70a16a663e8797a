"""``placement init --model M|--model-config config.json --chips h100,bertha [--out F]``: a starter instance that
validates and solves.

The starter has two traffic classes (an interactive one and a loose-SLO batch one, each SLO a p90 as
service levels are written in practice; ``mean`` bounds the mean instead), one domain group per chip
type on one switch, and as many domains of
each as hold the model's weights four times over (at least two), so that the
solver has room to choose. The model may be a catalogue name or a Hugging Face
id, in any case, or a Hugging Face ``config.json`` (``--model-config``); weights and KV are FP8 when every
chip runs FP8, else BF16 — a quantised checkpoint's own precision where every chip runs it.
Edit the classes (rates, lengths, SLOs) and the counts to yours.
"""

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from placement.core.instance.errors import InputError

__all__ = ["init_command", "starter_instance"]

#: The starter's classes: a chat-like interactive class and a report-like batch class.
#: Their SLOs are percentiles, as service levels are written in practice (p90 TTFT and TPOT over requests,
#: waits included); ``slo_percentile: mean`` / ``tpot_percentile: mean`` bound the means instead.
STARTER_CLASSES = (
    {"name": "interactive", "rate_rps": 5, "prompt_tokens": 1500, "output_tokens": 300, "ttft_ms": 1000,
     "tpot_ms": 50, "slo_percentile": "p90", "tpot_percentile": "p90"},
    {"name": "batch", "rate_rps": 5, "prompt_tokens": 1000, "output_tokens": 1500, "ttft_ms": 20000,
     "tpot_ms": 150, "slo_percentile": "p90", "tpot_percentile": "p90"},
)
#: Each chip type gets domains holding this many copies of the weights (room for the solver to choose).
WEIGHT_COPIES = 4
MIN_DOMAINS = 2


def _config_model(path: Path, out: Path | None) -> tuple[Any, dict[str, str], str]:
    """(record, checkpoint precisions, the path as the instance names it) of a ``--model-config`` file."""
    import os

    from costmodels.checkpoint import checkpoint_precision
    from costmodels.hf_config import HFConfigError, read_hf_config

    try:
        spec, cfg = read_hf_config(path)
        prec = checkpoint_precision(cfg)
    except HFConfigError as e:
        raise InputError(str(e), file=str(path), field=e.key or "--model-config") from None
    base = Path.cwd() if out is None or str(out) == "-" else Path(out).resolve().parent
    return spec, prec, Path(os.path.relpath(Path(path).resolve(), base)).as_posix()


def starter_instance(model: str | None, chips: list[str], model_config: Path | None = None,
                     out: Path | None = None) -> dict[str, Any]:
    """The starter instance document for ``model`` (or the Hugging Face ``model_config``, named relative to
    ``out``'s folder) on ``chips`` (InputError naming the option if unknown)."""
    from costmodels.models import BYTES_PER_VALUE
    from placement.core.instance.loading import model_aliases, model_of
    from placement.core.instance.schema import Instance
    from topology.chips import load_chip_catalog

    catalog = load_chip_catalog()
    unknown = [c for c in chips if c.lower() not in catalog]
    if not chips or unknown:
        raise InputError(f"unknown chip(s) {', '.join(map(repr, unknown)) or '(none given)'}; expected a "
                         f"comma-separated list of {', '.join(sorted(catalog))}", field="--chips")
    chips = list(dict.fromkeys(c.lower() for c in chips))
    if (model is None) == (model_config is None):
        raise InputError("give exactly one of --model (a catalogue name) and --model-config (a config.json)",
                         field="--model")
    checkpoint: dict[str, str] = {}
    if model_config is not None:
        spec, checkpoint, ref = _config_model(model_config, out)
        model_field: Any = {"config": ref}
        name = spec.name
    else:
        name = model_aliases().get(model.strip().lower())
        if name is None:
            try:
                model_of(Instance.model_construct(model=model))
            except InputError as e:
                raise InputError(e.detail, field="--model") from None
        assert name is not None
        spec = model_of(Instance.model_construct(model=name))
        model_field = name
    precision = "fp8" if all(catalog[c].runs("fp8") for c in chips) else "bf16"
    stored = checkpoint.get("weights")
    if stored in ("fp8", "fp4", "mxfp4") and all(catalog[c].runs(stored) for c in chips):
        precision = stored  # a quantised checkpoint is served as published where every chip runs it
    weights_bytes = spec.total_params * BYTES_PER_VALUE[precision]
    domains = []
    for c in chips:
        chip = catalog[c]
        if not chip.runs(precision):
            raise InputError(f"chip {c!r} runs neither FP8 nor BF16 matmuls", field="--chips")
        domain_bytes = chip.memory_bytes * chip.scale_up_domain_chips
        count = max(MIN_DOMAINS, math.ceil(WEIGHT_COPIES * weights_bytes / domain_bytes))
        domains.append({"name": f"{c}-pool", "chip": c, "count": count, "switch": "spine"})
    kv = "bf16" if precision == "bf16" else "fp8"
    prec_doc: dict[str, str] = {"weights": precision, "kv": kv}
    if precision == stored and "attention" in checkpoint:
        prec_doc["attention"] = checkpoint["attention"]
    return {
        "name": f"{name}-starter"[:64],
        "description": f"Starter instance for {spec.display_name} on {', '.join(chips)} (placement init): edit the "
                       "classes (rates, prompt and output tokens, SLOs) and the domain counts to yours",
        "model": model_field,
        "precision": prec_doc,
        "modes": ["aggregated", "pd"],
        "workload": {"classes": [dict(c) for c in STARTER_CLASSES]},
        "hardware": {"switches": ["spine"], "domains": domains},
    }


def init_command(
    chips: Annotated[str, typer.Option("--chips", help="comma-separated chip names, e.g. h100,bertha")],
    model: Annotated[str | None, typer.Option("--model", help="catalogue name or Hugging Face id (any case)")] = None,
    model_config: Annotated[Path | None, typer.Option("--model-config", help="a Hugging Face config.json instead "
                            "of --model (the instance names it relative to --out)")] = None,
    out: Annotated[Path | None, typer.Option("--out", help="write here (default and '-': standard output)")] = None,
) -> None:
    """Write a starter instance (YAML) that validates and solves; then edit its classes and counts."""
    import yaml

    from placement.cli.options import comma_list
    from placement.core.instance.loading import parse_instance
    from placement.core.plans.output import check_writable, write_atomic

    if out is not None:
        check_writable(out)
        if str(out) != "-" and Path(out).exists() and Path(out).is_file():
            raise InputError("exists; refusing to overwrite a file with a starter (remove it first)", file=str(out),
                             field="--out")
    doc = starter_instance(model, comma_list(chips), model_config, out)
    # The starter must validate, its model config found from where it is written.
    parse_instance(doc, source="<starter>" if out is None or str(out) == "-" else str(out))
    head = ("# Starter instance written by `placement init`; reference: docs/instance-format.md.\n"
            "# SLOs are p90s (slo_percentile, tpot_percentile); `mean` bounds the means instead.\n"
            "# Next: placement validate FILE; placement solve FILE --json plan.json\n")
    write_atomic("-" if out is None else out, head + yaml.safe_dump(doc, sort_keys=False, width=100))
