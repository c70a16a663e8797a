"""The tensor rates a stage's matmuls need on a chip: a chip without them gets no replica of the stage.

The layouts every mode enumerates (:mod:`placement.modes.layouts`) skip such chips, and a diagnosis
says so (:func:`placement.core.pipeline.diagnose.slo_floor`); both read :func:`missing_rates`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from placement.core.instance.context import Context
    from topology.chips import ChipSpec

__all__ = ["missing_rates", "runs_precisions"]


def missing_rates(ctx: Context, chip: ChipSpec, stage: str) -> list[str]:
    """The instance's matmul precisions ``stage`` runs on ``chip`` that it has no tensor rate for: the FFN's
    weights (all stages but ``decode-attention``) and the attention projections (all but ``decode-ffn``),
    e.g. gpt-oss's BF16 attention on an FP8/FP4-only card. The attention core needs none: it falls back to
    the weights' rate.

    Examples
    --------
    >>> from types import SimpleNamespace as NS
    >>> from costmodels.models import load_model_catalog
    >>> from topology.chips import load_chip_catalog
    >>> from placement.core.instance.schema import Precision
    >>> ctx = NS(model=load_model_catalog()["gpt-oss-20b"], instance=NS(precision=Precision(weights="fp4")))
    >>> corsair = load_chip_catalog()["corsair"]
    >>> missing_rates(ctx, corsair, "decode"), missing_rates(ctx, corsair, "decode-ffn")
    (['bf16'], [])
    """
    p = ctx.instance.precision
    needed = ([] if stage == "decode-attention" else [p.weights]) + \
        ([] if stage == "decode-ffn" else [p.attention_for(ctx.model)])
    out = []
    for precision in dict.fromkeys(needed):
        try:
            chip.flops(precision)
        except ValueError:
            out.append(precision)
    return out


def runs_precisions(ctx: Context, chip: ChipSpec, stage: str) -> bool:
    """Whether ``chip`` has every tensor rate ``stage``'s matmuls need (:func:`missing_rates`); a chip without
    them gets no replica of the stage."""
    return not missing_rates(ctx, chip, stage)
