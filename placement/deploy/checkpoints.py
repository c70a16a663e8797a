"""The checkpoint an engine loads: the model's weights in the plan's precision (``checkpoints.yaml``, sourced).

Examples
--------
>>> checkpoint_for("llama-3.1-70b", "fp8")
'nvidia/Llama-3.1-70B-Instruct-FP8'
>>> checkpoint_for("llama-3.2-1b", "fp4") is None
True
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml

__all__ = ["HF_ID", "checkpoint_for", "checkpoints"]

#: A Hugging Face repository id (``org/name``): what ``deploy --checkpoint`` accepts.
HF_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}(/[A-Za-z0-9][A-Za-z0-9._-]{0,95})?")


@cache
def checkpoints() -> dict[tuple[str, str], str]:
    """(catalogue model, weight precision) -> Hugging Face id, from ``checkpoints.yaml`` (each entry sourced)."""
    doc = yaml.safe_load(Path(__file__).with_name("checkpoints.yaml").read_text())
    return {(e["model"], e["precision"]): e["hf_id"] for e in doc["checkpoints"]}


def checkpoint_for(model: str, precision: str) -> str | None:
    """The sourced checkpoint of ``model`` with weights in ``precision``, or None when none is known."""
    return checkpoints().get((model, precision))
