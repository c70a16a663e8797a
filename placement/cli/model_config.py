"""``placement catalog models --config config.json``: what a Hugging Face config becomes, every derived size shown.

Examples
--------
>>> import json, tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp()) / "llama-like"  # a record is named after its config's folder
>>> d.mkdir()
>>> _ = (d / "config.json").write_text(json.dumps({"model_type": "llama", "num_hidden_layers": 32,
...     "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
...     "vocab_size": 128256}))
>>> rows = config_rows([d / "config.json"])
>>> rows[0]["name"], round(rows[0]["total_params"] / 1e9, 2)
('llama-like', 8.03)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from placement.core.instance.errors import InputError

__all__ = ["config_rows", "print_config_rows"]

_GB = 1e9


def _read_json(path: Path, what: str) -> dict:
    try:
        data = json.loads(path.read_bytes())
    except OSError as e:
        raise InputError(f"cannot read {what}: {e.strerror or e}", file=str(path)) from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{what} is not valid JSON: {e}", file=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object ({what}), got {type(data).__name__}", file=str(path))
    return data


def config_rows(paths: list[Path], quant_config: Path | None = None) -> list[dict[str, Any]]:
    """One row per config: :func:`costmodels.checkpoint.model_figures` at the checkpoint's precision, its
    notes and the model record (InputError naming the file and key on a config the reader refuses)."""
    from costmodels.checkpoint import checkpoint_precision, model_figures
    from costmodels.hf_config import HFConfigError, config_notes, read_hf_config

    quant = None if quant_config is None else _read_json(quant_config, "a quantisation config")
    rows = []
    for p in paths:
        try:
            spec, cfg = read_hf_config(p)
            prec = checkpoint_precision(cfg, quant)
        except HFConfigError as e:
            raise InputError(str(e), file=str(p), field=e.key or None) from None
        rows.append({**model_figures(spec, prec), "config": str(p), "notes": config_notes(cfg),
                     "record": spec.model_dump(mode="json", exclude_defaults=True)})
    return rows


def _fmt_bytes(b: float) -> str:
    return f"{b / _GB:,.2f} GB" if b >= 1e8 else f"{b:,.0f} B"


def print_config_rows(out, rows: list[dict[str, Any]]) -> None:
    """One table per config: the record's derived figures with their units."""
    from rich.table import Table

    for r in rows:
        p = r["precision"]
        t = Table(title=f"{r['name']} (from {r['config']})", caption="; ".join(r["notes"]) or None)
        t.add_column("figure")
        t.add_column("value", justify="right")
        prec = ", ".join(f"{k} {v}" for k, v in p.items())
        kv = p.get("kv", "bf16")
        for label, value in (
            ("parameters, total", f"{r['total_params'] / 1e9:,.2f} B"),
            ("parameters, active per token", f"{r['active_params'] / 1e9:,.2f} B"),
            ("  embeddings + LM head", f"{r['embedding_params'] / 1e9:,.2f} B"),
            ("  token mixers (attention, linear)", f"{r['token_mixer_params'] / 1e9:,.2f} B"),
            ("  FFN (dense, experts, routers)", f"{r['ffn_params'] / 1e9:,.2f} B"),
            ("  encoder (vision tower, stored only)", f"{r['encoder_params'] / 1e9:,.2f} B"),
            (f"weight bytes ({prec})", _fmt_bytes(r["weight_bytes"])),
            ("  bytes per value, FFN / attention (scales included)",
             " / ".join(f"{b:g}" for b in r["bytes_per_value"].values())),
            ("layers (with an FFN)", f"{r['layers']} ({r['ffn_layers']})"),
            ("layer kinds", ", ".join(f"{n} × {k}" for k, n in r["layer_kinds"].items())),
            ("experts", r["experts"] or "dense"),
            (f"KV bytes per token and attention layer ({kv})", _fmt_bytes(r["kv_bytes_per_token_per_layer"])),
            (f"KV bytes per token, all layers ({kv})", _fmt_bytes(r["kv_bytes_per_token"])),
            *((f"KV + state of one sequence at {c}", _fmt_bytes(b)) for c, b in r["kv_bytes_per_sequence"].items()),
            ("recurrent state per sequence", _fmt_bytes(r["state_bytes_per_sequence"])),
        ):
            t.add_row(label, value)
        out.print(t)
