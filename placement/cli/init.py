"""``placement init --model M --chips h100,bertha [--out F]``: a starter instance that validates and solves.

The starter has two traffic classes (an interactive one and a loose-SLO batch one, each SLO a p90 as
service levels are written in practice; ``mean`` bounds the mean instead), one domain group per chip
type on one switch, and as many domains of
each as hold the model's weights four times over (at least two), so that the
solver has room to choose. The model may be a catalogue name or a Hugging Face
id, in any case; weights and KV are FP8 when every chip runs FP8, else BF16.
Edit the classes (rates, lengths, SLOs) and the counts to yours.
"""

import math
from pathlib import Path
from typing import Annotated, Any

import typer

from placement.core.errors import InputError

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


def starter_instance(model: str, chips: list[str]) -> dict[str, Any]:
    """The starter instance document for ``model`` on ``chips`` (InputError naming the option if unknown)."""
    from costmodels.models import BYTES_PER_VALUE
    from placement.core.loading import model_aliases, model_of
    from placement.core.schema import Instance
    from topology.chips import load_chip_catalog

    catalog = load_chip_catalog()
    unknown = [c for c in chips if c.lower() not in catalog]
    if not chips or unknown:
        raise InputError(f"unknown chip(s) {', '.join(map(repr, unknown)) or '(none given)'}; expected a "
                         f"comma-separated list of {', '.join(sorted(catalog))}", field="--chips")
    chips = list(dict.fromkeys(c.lower() for c in chips))
    name = model_aliases().get(model.strip().lower())
    if name is None:
        try:
            model_of(Instance.model_construct(model=model))
        except InputError as e:
            raise InputError(e.detail, field="--model") from None
    assert name is not None
    precision = "fp8" if all(catalog[c].runs("fp8") for c in chips) else "bf16"
    spec = model_of(Instance.model_construct(model=name))
    weights_bytes = spec.total_params * BYTES_PER_VALUE[precision]
    domains = []
    for c in chips:
        chip = catalog[c]
        if not chip.runs(precision):
            raise InputError(f"chip {c!r} runs neither FP8 nor BF16 matmuls", field="--chips")
        domain_bytes = chip.memory_bytes * chip.scale_up_domain_chips
        count = max(MIN_DOMAINS, math.ceil(WEIGHT_COPIES * weights_bytes / domain_bytes))
        domains.append({"name": f"{c}-pool", "chip": c, "count": count, "switch": "spine"})
    return {
        "name": f"{name}-starter",
        "description": f"Starter instance for {spec.display_name} on {', '.join(chips)} (placement init): edit the "
                       "classes (rates, prompt and output tokens, SLOs) and the domain counts to yours",
        "model": name,
        "precision": {"weights": precision, "kv": precision},
        "modes": ["aggregated", "pd"],
        "workload": {"classes": [dict(c) for c in STARTER_CLASSES]},
        "hardware": {"switches": ["spine"], "domains": domains},
    }


def init_command(
    model: Annotated[str, typer.Option("--model", help="catalogue name or Hugging Face id (any case)")],
    chips: Annotated[str, typer.Option("--chips", help="comma-separated chip names, e.g. h100,bertha")],
    out: Annotated[Path | None, typer.Option("--out", help="write here (default and '-': standard output)")] = None,
) -> None:
    """Write a starter instance (YAML) that validates and solves; then edit its classes and counts."""
    import yaml

    from placement.cli.options import comma_list
    from placement.core.loading import parse_instance
    from placement.core.output import check_writable, write_atomic

    if out is not None:
        check_writable(out)
        if str(out) != "-" and Path(out).exists() and Path(out).is_file():
            raise InputError("exists; refusing to overwrite a file with a starter (remove it first)", file=str(out),
                             field="--out")
    doc = starter_instance(model, comma_list(chips))
    parse_instance(doc, source="<starter>")  # the starter must validate
    head = ("# Starter instance written by `placement init`; reference: docs/instance-format.md.\n"
            "# SLOs are p90s (slo_percentile, tpot_percentile); `mean` bounds the means instead.\n"
            "# Next: placement validate FILE; placement solve FILE --json plan.json\n")
    write_atomic("-" if out is None else out, head + yaml.safe_dump(doc, sort_keys=False, width=100))
