"""CLI commands ``roofline`` and ``catalog`` (registered on the app in :mod:`placement.cli.app`).

``roofline`` prices one stage of one model on one chip with the cost models and
prints the step time, throughput, arithmetic intensity against the ridge point,
which bound binds, KV bytes per token and the memory fit; ``--plot`` draws the
roofline with the stage's points across batch sizes. ``catalog`` lists the
shipped chips or models. Both are plain functions: the typer app registers them.
"""

import io
import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from placement.cli.options import CatalogKind, Precision, Stage
from placement.core.instance.errors import EXIT_INFEASIBLE, InputError

if TYPE_CHECKING:
    from costmodels.models import ModelSpec
    from topology.chips import ChipSpec

__all__ = ["MAX_BATCH", "PLOT_BATCHES", "batch_at_tpot", "catalog", "catalog_rows", "plot_fits", "roofline",
           "roofline_figure", "roofline_summary"]

#: Batch sizes drawn on the roofline plot: powers of two from 1 to 4096.
PLOT_BATCHES = tuple(2.0**k for k in range(13))
#: Largest batch ``--tpot-ms`` considers.
MAX_BATCH = 65536
_MS = 1e3
_GB = 1e9
_TERA = 1e12
_CATALOG_KINDS = ("chips", "models", "prices")


def _chips() -> dict[str, "ChipSpec"]:
    from topology.chips import load_chip_catalog

    try:
        return load_chip_catalog()
    except FileNotFoundError as e:
        raise InputError(f"chip catalogue not found ({e.filename})") from None


def _models() -> dict[str, "ModelSpec"]:
    from costmodels.models import load_model_catalog

    try:
        return load_model_catalog()
    except FileNotFoundError as e:
        raise InputError(f"model catalogue not found ({e.filename})") from None


def _pick(kind: str, name: str, table: dict, option: str):
    if name not in table:
        raise InputError(f"unknown {kind} {name!r}; expected one of {', '.join(sorted(table))}", field=option)
    return table[name]


def _check_choice(value: str, allowed, option: str, what: str) -> None:
    if value not in allowed:
        raise InputError(f"unknown {what} {value!r}; expected one of {', '.join(allowed)}", field=option)


def _step(chip, model, stage, batch, context, cached, tp, ep, pp, precision, kv_precision, dp=1):
    from costmodels import decode_attention_step, decode_ffn_step, decode_step, prefill_step

    args = {"tp": tp, "ep": ep, "pp": pp, "precision": precision, "kv_precision": kv_precision}
    if stage == "prefill":
        return prefill_step(chip, model, prompt=context, cached=cached, batch=batch, dp=dp, **args)
    if stage == "decode-attention":
        return decode_attention_step(chip, model, batch=batch, context=context, **args)
    if stage == "decode-ffn":
        return decode_ffn_step(chip, model, batch=batch, context=context, **args)
    return decode_step(chip, model, batch=batch, context=context, dp=dp, **args)


def batch_at_tpot(chip: "ChipSpec", model: "ModelSpec", stage: str, tpot_s: float, context: int, cached: int, tp: int,
                  ep: int, pp: int, precision: str, kv_precision: str, dp: int = 1) -> tuple[int, int]:
    """(largest batch, largest power-of-two batch) whose decode step takes at most ``tpot_s`` and fits (0: none).

    Every batch from 1 to :data:`MAX_BATCH` is priced at once; the step grows with the batch, so the
    largest one that meets the TPOT is the most throughput at it.
    """
    import numpy as np

    from costmodels import fits, memory_per_chip_bytes

    b = np.arange(1, MAX_BATCH + 1, dtype=float)
    st = _step(chip, model, stage, b, context, cached, tp, ep, pp, precision, kv_precision, dp)
    mem = memory_per_chip_bytes(chip, model, stage=stage, batch=b, context=cached + context, tp=tp, ep=ep, pp=pp,
                                dp=dp, precision=precision, kv_precision=kv_precision)
    ok = (np.asarray(st.time_s) <= tpot_s * (1 + 1e-12)) & np.asarray(fits(chip, mem))
    pow2 = ok & (np.bitwise_and(b.astype(np.int64), b.astype(np.int64) - 1) == 0)
    return (int(b[ok].max()) if ok.any() else 0), (int(b[pow2].max()) if pow2.any() else 0)


def roofline_summary(
    chip: str,
    model: str,
    *,
    stage: str = "decode",
    batch: int = 1,
    context: int = 4096,
    cached: int = 0,
    precision: str = "bf16",
    kv_precision: str | None = None,
    tp: int = 1,
    ep: int = 1,
    pp: int = 1,
    attention_dp: int = 1,
    chips: dict[str, "ChipSpec"] | None = None,
    models: dict[str, "ModelSpec"] | None = None,
    tpot_ms: float | None = None,
) -> dict[str, Any]:
    """Everything ``roofline`` prints, as a JSON-ready dict (base units plus ms/GB).

    ``context`` is the decode context (tokens in the KV cache) or, for
    ``prefill``, the prompt length (after ``cached`` prefix tokens).
    ``attention_dp`` data-parallel attention groups of ``tp`` chips share the
    ``batch`` (prefill and decode), with ``ep`` any divisor of dp·tp: a replica
    of dp·tp·pp chips (:mod:`costmodels.roofline`).
    With ``tpot_ms`` (decode stages) ``batch`` is the largest batch whose step
    meets it (:func:`batch_at_tpot`), and the largest power of two beside it.
    """
    from costmodels import (
        STAGES,
        fits,
        memory_per_chip_bytes,
        tokens_per_s_per_mw,
        usd_per_million_tokens,
    )
    from topology.chips import PRECISIONS

    c = _pick("chip", chip, _chips() if chips is None else chips, "--chip")
    m = _pick("model", model, _models() if models is None else models, "--model")
    _check_choice(stage, STAGES, "--stage", "stage")
    _check_choice(precision, PRECISIONS, "--precision", "precision")
    if not c.runs(precision):
        raise InputError(f"chip {c.name!r} has no {precision} rate (it lists {', '.join(sorted(c.flops_per_s))})",
                         field="--precision")
    kv_prec = precision if kv_precision is None else kv_precision
    _check_choice(kv_prec, PRECISIONS, "--kv-precision", "KV precision")
    if min(batch, tp, pp, ep, attention_dp) < 1 or context < 0 or cached < 0:
        raise InputError("batch, tp, ep, pp, attention-dp must be ≥ 1 and context, cached ≥ 0", field="--batch")
    if attention_dp > 1 and stage not in ("prefill", "decode"):
        raise InputError(f"--attention-dp {attention_dp}: data-parallel attention is for prefill and decode, "
                         f"not {stage}", field="--attention-dp")
    if (attention_dp * tp) % ep:
        raise InputError(f"ep must divide attention-dp·tp ({attention_dp}·{tp}), got {ep}", field="--ep")

    at_tpot: dict[str, Any] = {}
    if tpot_ms is not None:
        if stage == "prefill" or not tpot_ms > 0:
            raise InputError("--tpot-ms needs a decode stage and a positive time", field="--tpot-ms")
        batch, pow2 = batch_at_tpot(c, m, stage, tpot_ms / _MS, context, cached, tp, ep, pp, precision, kv_prec, attention_dp)
        if batch == 0:
            one = _step(c, m, stage, 1, context, cached, tp, ep, pp, precision, kv_prec, attention_dp).time_s * _MS
            raise InputError(f"no batch meets {tpot_ms:g} ms and fits (batch 1 steps in {one:.3f} ms)",
                             field="--tpot-ms")
        pst = _step(c, m, stage, pow2, context, cached, tp, ep, pp, precision, kv_prec, attention_dp) if pow2 else None
        at_tpot = {"tpot_slo_ms": tpot_ms, "max_batch_at_tpot": batch, "max_power_of_two_batch_at_tpot": pow2,
                   "tokens_per_s_per_chip_at_power_of_two": pow2 / pst.time_s / (attention_dp * tp * pp) if pst else 0.0}
    st = _step(c, m, stage, batch, context, cached, tp, ep, pp, precision, kv_prec, attention_dp)
    g = attention_dp * tp * pp
    tokens = batch * (context if stage == "prefill" else 1)
    per_user = (context if stage == "prefill" else 1) / st.time_s
    mem_context = cached + context
    mem = memory_per_chip_bytes(c, m, stage=stage, batch=batch, context=mem_context, tp=tp, ep=ep, pp=pp,
                                dp=attention_dp, precision=precision, kv_precision=kv_prec)
    ridge = c.ridge_flop_per_byte(precision)
    tps = tokens / st.time_s
    return {
        "chip": c.name,
        "model": m.name,
        "stage": stage,
        "batch": batch,
        "context_tokens": context,
        "cached_tokens": cached,
        "precision": precision,
        "kv_precision": kv_prec,
        "tp": tp,
        "ep": ep,
        "pp": pp,
        "attention_dp": attention_dp,
        "chips_per_replica": g,
        "step_time_ms": st.time_s * _MS,
        "compute_ms": st.compute_s * _MS,
        "memory_ms": st.memory_s * _MS,
        "comm_ms": st.comm_s * _MS,
        "overhead_ms": st.overhead_s * _MS,
        "tokens_per_s": tps,
        "tokens_per_s_per_user": per_user,
        "tokens_per_s_per_chip": tps / g,
        "flops": st.flops,
        "bytes": st.bytes,
        "intensity_flop_per_byte": st.intensity_flop_per_byte,
        "ridge_flop_per_byte": ridge,
        "effective_ridge_flop_per_byte": ridge * c.compute_efficiency / c.memory_efficiency,
        "bound": "memory" if st.memory_bound else "compute",
        "kv_bytes_per_token": float(m.kv_bytes_per_token(kv_prec, max(context, 1))),
        "memory_per_chip_gb": mem / _GB,
        "capacity_per_chip_gb": c.memory_bytes / _GB,
        "fits": fits(c, mem),
        "usd_per_million_tokens": usd_per_million_tokens(g * c.usd_per_hour, tps),
        "tokens_per_s_per_mw": tokens_per_s_per_mw(tps, g * c.power_w),
        **at_tpot,
    }


def plot_fits(chip: "ChipSpec", model: "ModelSpec", summary: dict[str, Any]) -> list[bool]:
    """Whether each of :data:`PLOT_BATCHES` fits in the chip's memory at the summary's layout and context."""
    import numpy as np

    from costmodels import fits, memory_per_chip_bytes

    s = summary
    mem = memory_per_chip_bytes(chip, model, stage=s["stage"], batch=np.asarray(PLOT_BATCHES),
                                context=s["cached_tokens"] + s["context_tokens"], tp=s["tp"], ep=s["ep"], pp=s["pp"],
                                dp=s["attention_dp"], precision=s["precision"], kv_precision=s["kv_precision"])
    return [bool(f) for f in np.broadcast_to(np.asarray(fits(chip, mem)), (len(PLOT_BATCHES),))]


def roofline_figure(chip: "ChipSpec", model: "ModelSpec", summary: dict[str, Any]):
    """The roofline chart (matplotlib figure): the chip's roof (peak and achievable), its ridge, the stage's
    batch sweep (batches that do not fit in memory drawn as red crosses, in the legend as such)."""
    import matplotlib
    import numpy as np

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = summary
    prec = s["precision"]
    flops, bw = chip.flops(prec), chip.memory_bandwidth_bytes_per_s
    sweep = _step(chip, model, s["stage"], np.asarray(PLOT_BATCHES), s["context_tokens"], s["cached_tokens"],
                  s["tp"], s["ep"], s["pp"], prec, s["kv_precision"], s["attention_dp"])
    g = s["chips_per_replica"]
    achieved = np.asarray(sweep.flops) / np.asarray(sweep.time_s) / g
    intensity = np.asarray(sweep.intensity_flop_per_byte)
    fit = np.asarray(plot_fits(chip, model, s))

    lo = min(0.1, float(intensity.min()) / 2)
    hi = max(10 * s["ridge_flop_per_byte"], float(intensity.max()) * 2)
    x = np.geomspace(lo, hi, 200)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.loglog(x, np.minimum(flops, x * bw) / _TERA, "k-", label=f"{chip.display_name} peak ({prec})")
    eff = np.minimum(flops * chip.compute_efficiency, x * bw * chip.memory_efficiency) / _TERA
    ax.loglog(x, eff, "k--", lw=0.8, label="achievable (η_c, η_m)")
    ax.axvline(s["ridge_flop_per_byte"], color="grey", ls=":", label=f"ridge {s['ridge_flop_per_byte']:.0f} FLOP/B")
    batches = np.asarray(PLOT_BATCHES)
    if fit.any():
        ax.loglog(intensity[fit], achieved[fit] / _TERA, "o-", ms=4,
                  label=f"{s['stage']} B={int(batches[fit][0])}…{int(batches[fit][-1])}, fits in memory")
    if not fit.all():
        ax.loglog(intensity[~fit], achieved[~fit] / _TERA, "x:", color="tab:red", ms=6,
                  label=f"does not fit in memory (B={int(batches[~fit][0])}…{int(batches[~fit][-1])})")
    for b, xi, yi in zip(PLOT_BATCHES, intensity, achieved):
        if b in (1, 16, 256, 4096):
            ax.annotate(f"B={int(b)}", (xi, yi / _TERA), textcoords="offset points", xytext=(4, -10), fontsize=7)
    here = s["flops"] / (s["step_time_ms"] / _MS) / g / _TERA
    ax.loglog([s["intensity_flop_per_byte"]], [here], "r*", ms=12,
              label=f"this config (B={s['batch']}" + (")" if s["fits"] else ", does not fit)"))
    from placement.cli.plots import log_axis

    log_axis(ax, "x", list(x))
    log_axis(ax, "y", [float(v) for v in achieved / _TERA] + [flops / _TERA])
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("achieved TFLOP/s per chip")
    ax.set_title(f"{model.display_name} {s['stage']} on {chip.display_name}, context {s['context_tokens']}, "
                 f"tp={s['tp']} ep={s['ep']} pp={s['pp']}", fontsize=9)
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(True, which="both", lw=0.3)
    return fig


def _plot(path: Path, chip: "ChipSpec", model: "ModelSpec", summary: dict[str, Any]) -> None:
    """Write :func:`roofline_figure` as a PNG."""
    import matplotlib.pyplot as plt

    from placement.core.plans.output import write_bytes_atomic

    fig = roofline_figure(chip, model, summary)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    plt.close(fig)
    write_bytes_atomic(path, buf.getvalue())


_ROWS = (
    ("step time", "step_time_ms", "{:.3f} ms"),
    ("  compute / memory", None, None),
    ("  comm / overhead", None, None),
    ("tokens/s (replica)", "tokens_per_s", "{:,.1f}"),
    ("tokens/s per user", "tokens_per_s_per_user", "{:,.1f}"),
    ("tokens/s per chip", "tokens_per_s_per_chip", "{:,.1f}"),
    ("arithmetic intensity", "intensity_flop_per_byte", "{:,.1f} FLOP/B"),
    ("ridge point (peak / achievable)", None, None),
    ("bound", "bound", "{}"),
    ("KV bytes per token", "kv_bytes_per_token", "{:,.0f} B"),
    ("memory per chip", None, None),
    ("fits", "fits", "{}"),
    ("$ per million tokens", "usd_per_million_tokens", "{:.3f}"),
    ("tokens/s per MW", "tokens_per_s_per_mw", "{:,.0f}"),
)


def _print_summary(s: dict[str, Any], stderr: bool = False) -> None:
    from rich.table import Table

    from placement.cli.consoles import err, out

    t = Table(title=f"{s['model']} · {s['stage']} on {s['chip']} · B={s['batch']} context={s['context_tokens']} · "
                    f"dp={s['attention_dp']} tp={s['tp']} ep={s['ep']} pp={s['pp']} ({s['chips_per_replica']} chips) · {s['precision']}")
    t.add_column("quantity")
    t.add_column("value", justify="right")
    special = {
        "  compute / memory": f"{s['compute_ms']:.3f} / {s['memory_ms']:.3f} ms",
        "  comm / overhead": f"{s['comm_ms']:.3f} / {s['overhead_ms']:.3f} ms",
        "ridge point (peak / achievable)": f"{s['ridge_flop_per_byte']:.1f} / {s['effective_ridge_flop_per_byte']:.1f} FLOP/B",
        "memory per chip": f"{s['memory_per_chip_gb']:.2f} of {s['capacity_per_chip_gb']:.2f} GB",
    }
    for label, key, fmt in _ROWS:
        t.add_row(label, special[label] if key is None else fmt.format(s[key]))
    if "max_batch_at_tpot" in s:
        t.add_row(f"largest batch at TPOT {s['tpot_slo_ms']:g} ms", f"{s['max_batch_at_tpot']:,}")
        t.add_row("  largest power of two / its tokens/s per chip",
                  f"{s['max_power_of_two_batch_at_tpot']:,} / {s['tokens_per_s_per_chip_at_power_of_two']:,.1f}")
    (err if stderr else out).print(t)


def roofline(
    chip: Annotated[str, typer.Option("--chip", help="chip name from the catalogue")],
    model: Annotated[str, typer.Option("--model", help="model name from the catalogue")],
    stage: Annotated[Stage, typer.Option("--stage", help="stage of the model")] = Stage.decode,
    batch: Annotated[int, typer.Option("--batch", min=1, help="sequences per replica")] = 1,
    context: Annotated[int, typer.Option("--context", min=0, help="decode: tokens in the KV cache; prefill: prompt tokens")] = 4096,
    cached: Annotated[int, typer.Option("--cached", min=0, help="prefill: cached prefix tokens")] = 0,
    precision: Annotated[Precision, typer.Option("--precision", help="weight precision")] = Precision.bf16,
    kv_precision: Annotated[Precision | None, typer.Option("--kv-precision",
                                                           help="KV precision (default: --precision)")] = None,
    tp: Annotated[int, typer.Option("--tp", min=1, help="tensor parallel ranks")] = 1,
    ep: Annotated[int, typer.Option("--ep", min=1, help="expert-parallel ranks: any divisor of attention-dp·tp")] = 1,
    pp: Annotated[int, typer.Option("--pp", min=1, help="pipeline stages")] = 1,
    attention_dp: Annotated[int, typer.Option("--attention-dp", min=1,
                                              help="data-parallel attention groups of tp chips (decode, prefill)")] = 1,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the figures as JSON here ('-': standard "
                                                  "output, instead of the table)")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="write a roofline PNG here")] = None,
    tpot_ms: Annotated[float | None, typer.Option("--tpot-ms", help="decode: use the largest batch whose step "
                                                   "meets this TPOT (ignores --batch)")] = None,
) -> None:
    """Roofline of one stage on one chip: step time, throughput, intensity vs ridge, memory fit."""
    s = roofline_summary(chip, model, stage=str(stage), batch=batch, context=context, cached=cached,
                         precision=str(precision), kv_precision=None if kv_precision is None else str(kv_precision),
                         tp=tp, ep=ep, pp=pp, attention_dp=attention_dp, tpot_ms=tpot_ms)
    if plot is not None:
        _plot(plot, _chips()[chip], _models()[model], s)
    if json_out is not None:
        from placement.core.plans.output import write_atomic

        write_atomic(json_out, json.dumps(s, indent=2) + "\n")
    if json_out is None or str(json_out) != "-":
        _print_summary(s, stderr=str(plot) == "-")  # a PNG on standard output: the table goes to stderr
        if plot is not None and str(plot) != "-":
            from placement.cli.consoles import out

            out.print(f"wrote {plot}")
    if not s["fits"]:
        from placement.cli.consoles import err

        err.print(f"[red]does not fit[/red]: {s['memory_per_chip_gb']:.2f} GB per chip needed, "
                  f"{s['capacity_per_chip_gb']:.2f} GB available on {chip}; use more chips (--tp, --pp, --ep), "
                  "a smaller batch or context, or a narrower --precision / --kv-precision",
                  highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_INFEASIBLE)


def _ridge_text(ridge: float | None) -> str:
    return "–" if ridge is None else f"{ridge:.0f}"


def _heldout_text(error: float | None, status: str) -> str:
    """Median held-out |TPOT error| (benchmarks/CALIBRATION.md), or why there is none."""
    if error is not None:
        return f"{error * 100:.0f} %"
    return "in-sample only" if status == "calibrated" else "–"


def _band_record(chip: str) -> dict[str, Any]:
    """The error band a chip is priced with (:mod:`costmodels.bands`): family, held-out median error and
    ``measured ÷ predicted`` at p10 / p50 / p90 per metric."""
    from costmodels.bands import METRICS, PLAN_LEVELS, chip_band

    b = chip_band(chip)
    return {"family": b.family, "levels": list(PLAN_LEVELS),
            **{m: {"heldout_median_abs_error": b.heldout_error.get(m),
                   "measured_over_predicted": [round(v, 4) for v in b.span(m, PLAN_LEVELS)]} for m in METRICS}}


def _span_text(band: dict[str, Any], metric: str) -> str:
    """``p10–p90×`` of a band's ``measured ÷ predicted`` for ``metric``."""
    lo, _, hi = band[metric]["measured_over_predicted"]
    return f"{lo:.2f}–{hi:.2f}×"


def _heldout_cell(row: dict[str, Any]) -> str:
    """``TPOT / TTFT`` held-out median error: the chip's own TPOT figure (CALIBRATION.md), its family's TTFT."""
    ttft = row["error_band"]["ttft"]["heldout_median_abs_error"]
    tpot = _heldout_text(row["heldout_tpot_error"], row["calibration"])
    return tpot if ttft is None else f"{tpot} / {ttft * 100:.0f} %"


def catalog_rows(kind: str) -> list[dict[str, Any]]:
    """The catalogue as JSON-ready rows: records plus derived figures (chips: their error band too)."""
    _check_choice(kind, _CATALOG_KINDS, "kind", "catalogue")
    if kind == "prices":
        from placement.cli.prices import price_rows

        return price_rows()
    if kind == "chips":
        return [dict(c.model_dump(mode="json"),
                     ridge_flop_per_byte_bf16=c.ridge_flop_per_byte("bf16") if c.runs("bf16") else None,
                     error_band=_band_record(c.name))
                for c in _chips().values()]
    return [dict(m.model_dump(mode="json"), total_params=m.total_params, active_params=m.active_params,
                 kv_bytes_per_token_bf16=m.kv_bytes_per_token("bf16"), sparsity=m.sparsity)
            for m in _models().values()]


def catalog(
    kind: Annotated[CatalogKind, typer.Argument(help="what to list")] = CatalogKind.chips,
    json_out: Annotated[Path | None, typer.Option("--json", help="write the rows as JSON here ('-': standard "
                                                  "output, instead of the table)")] = None,
    config: Annotated[list[Path] | None, typer.Option("--config", help="models: a Hugging Face config.json "
                      "instead of the catalogue, every derived size shown (repeatable)")] = None,
    quant_config: Annotated[Path | None, typer.Option("--quant-config", help="with --config: a ModelOpt "
                            "hf_quant_config.json giving the checkpoint's precisions")] = None,
) -> None:
    """List the shipped chip or model catalogue, the chip price sets, or the model a Hugging Face config.json
    describes."""
    from rich.table import Table

    from placement.cli.consoles import out

    kind = str(kind)
    if config or quant_config is not None:
        from placement.cli.model_config import config_rows, print_config_rows

        if kind != "models" or not config:
            raise InputError("--config and --quant-config describe models: placement catalog models --config "
                             "config.json [--quant-config hf_quant_config.json]", field="--config")
        rows = config_rows(list(config), quant_config)
        if json_out is not None:
            from placement.core.plans.output import write_atomic

            write_atomic(json_out, json.dumps(rows, indent=2) + "\n")
            if str(json_out) == "-":
                return
        print_config_rows(out, rows)
        return
    caption = ("held-out (benchmarks/CALIBRATION.md): TPOT, the chip's median |error|, the worse of "
               "leave-one-source-out and leave-one-model-out; TTFT, its family's leave-one-source-out median; "
               "band: measured ÷ predicted at p10–p90 of the chip family's held-out points "
               "(costmodels/catalog/error_bands.yaml); an uncalibrated chip takes the widest band")
    rows = catalog_rows(kind)
    if json_out is not None:
        from placement.core.plans.output import write_atomic

        write_atomic(json_out, json.dumps(rows, indent=2) + "\n")
        if str(json_out) == "-":
            return
    if kind == "prices":
        from placement.cli.prices import print_prices

        print_prices(out, rows)
        return
    if kind == "chips":
        t = Table(title="chips", caption=caption)
        for col in ("name", "kind", "BF16 / FP8 / FP4 TFLOP/s", "memory GB", "TB/s", "ridge", "domain",
                    "scale-up GB/s", "$/h", "W", "calibration", "held-out TPOT / TTFT",
                    "TPOT band", "TTFT band"):
            t.add_column(col, justify="left" if col in ("name", "kind") else "right")
        for r in rows:
            f = r["flops_per_s"]
            tf = " / ".join(f"{f[p] / _TERA:,.0f}" if p in f else "–" for p in ("bf16", "fp8", "fp4"))
            mem = r["memory"][0]
            t.add_row(r["name"], r["kind"], tf, f"{mem['capacity_bytes'] / _GB:,.1f}",
                      f"{mem['bandwidth_bytes_per_s'] / _TERA:,.2f}", _ridge_text(r["ridge_flop_per_byte_bf16"]),
                      str(r["scale_up_domain_chips"]), f"{r['scale_up_bandwidth_bytes_per_s'] / _GB:,.0f}",
                      f"{r['usd_per_hour']:.2f}", f"{r['power_w']:,.0f}", r["calibration"],
                      _heldout_cell(r), _span_text(r["error_band"], "tpot"), _span_text(r["error_band"], "ttft"))
    else:
        t = Table(title="models", caption="params: derived from the architecture; published: the publisher's "
                  "total (sources in costmodels/catalog/models.yaml); Hugging Face ids each record serves: --json")
        for col in ("name", "layers", "hidden", "attention", "params B", "published B", "active B",
                    "KV B/token (bf16)", "experts", "calibration"):
            t.add_column(col, justify="left" if col in ("name", "attention", "calibration") else "right")
        for r in rows:
            a, moe = r["attention"], r["moe"]
            att = f"{a['kind']} {a['heads']}h/{a['kv_heads']}kv"
            ex = f"{moe['active_experts']}/{moe['experts']}+{moe['shared_experts']}" if moe else "dense"
            published = r["published_total_params"]
            t.add_row(r["name"], str(r["layers"]), str(r["hidden_size"]), att, f"{r['total_params'] / 1e9:,.1f}",
                      "–" if published is None else f"{published / 1e9:,.1f}", f"{r['active_params'] / 1e9:,.1f}",
                      f"{r['kv_bytes_per_token_bf16']:,.0f}", ex, r["calibration"])
    out.print(t)
