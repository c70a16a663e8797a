"""Commands ``measure import``, ``measure compare`` and ``calibrate``: the closed loop (docs/closed-loop.md).

``measure import`` reads benchmark clients' result files (:mod:`placement.measure.importer`) into one
measurements file; ``calibrate`` refits the chips they cover (:mod:`placement.measure.refit`) into a
calibration overlay that ``solve``, ``check``, ``capacity``, ``compare``, ``replan``, ``report`` and
``deploy`` take with ``--calibration``; ``measure compare`` sets each point against its prediction and
band. Outputs are written whole or not at all; a bad file exits 2 naming the file and the field.
"""

from pathlib import Path
from typing import Annotated

import typer

from placement.cli.guard import guarded
from placement.cli.options import CalibrationOpt

__all__ = ["calibrate_command", "measure_app"]

measure_app = typer.Typer(help="import what a deployment measured; compare it with the predictions",
                          no_args_is_help=True, add_completion=False)

_Out = Annotated[Path, typer.Option("--out", help="write the measurements file here (YAML; - for standard output)")]


def _yaml(doc: dict, header: str) -> str:
    import yaml

    return header + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110)


def _write(path: Path, text: str, inputs: list[Path]) -> None:
    from placement.core.plans.output import check_writable, refuse_inputs, write_atomic

    if str(path) == "-":
        typer.echo(text, nl=False)
        return
    check_writable(path)
    refuse_inputs({"--out": path}, inputs)
    write_atomic(path, text)


def import_command(
    files: Annotated[list[Path], typer.Argument(help="result files: vllm bench serve --save-result JSON, "
                                                      "sglang.bench_serving JSONL, aiperf / genai-perf "
                                                      "profile exports, InferenceX agg_*.json")],
    out: _Out,
    chip: Annotated[str | None, typer.Option(help="the catalogue chip the runs were on (when the file "
                                                  "does not say)")] = None,
    chips: Annotated[int | None, typer.Option(help="chips serving each run, all replicas (default tp·pp·dp)",
                                              min=1)] = None,
    model: Annotated[str | None, typer.Option(help="the catalogue model (when the file's name for it is "
                                                   "another)")] = None,
    framework: Annotated[str | None, typer.Option(help="vllm, sglang or trtllm (when the file does not say)")] = None,
    precision: Annotated[str | None, typer.Option(help="bf16, fp8 or fp4 (default: from the model name, else "
                                                       "bf16)")] = None,
    tp: Annotated[int | None, typer.Option(help="tensor parallel size", min=1)] = None,
    pp: Annotated[int | None, typer.Option(help="pipeline parallel size", min=1)] = None,
    ep: Annotated[int | None, typer.Option(help="expert parallel size", min=1)] = None,
    dp: Annotated[int | None, typer.Option(help="data parallel ranks of one engine", min=1)] = None,
    fmt: Annotated[str | None, typer.Option("--format", help="the files' format (default: from their keys)")] = None,
) -> None:
    """Read benchmark result files into one measurements file (what each states, the rest from the flags)."""
    from placement.cli.consoles import err
    from placement.measure.importer import import_files

    if str(out) != "-":
        from placement.core.plans.output import check_writable

        check_writable(out)  # before reading, not after
    given = {"chip": chip, "chips": chips, "model": model, "framework": framework, "precision": precision,
             "tp": tp, "pp": pp, "ep": ep, "dp": dp}
    meas = import_files(list(files), {k: v for k, v in given.items() if v is not None}, fmt)
    _write(out, _yaml(meas.model_dump(mode="json", exclude_none=True),
                      "# Measured serving points (placement measure import). Definitions: docs/closed-loop.md.\n"),
           list(files))
    for s in meas.sources:
        err.print(f"{s.path}: {s.format}, {s.points} point{'s' if s.points != 1 else ''}", highlight=False)


def compare_command(
    measurements: Annotated[list[Path], typer.Argument(help="measurements files (measure import --out)")],
    instance: Annotated[Path, typer.Option("--instance", help="the instance whose chips (and calibration) "
                                                              "price the points")],
    calibration: CalibrationOpt = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write the rows as JSON here")] = None,
) -> None:
    """Predicted vs measured TPOT and TTFT per point, and the share inside the p10–p90 bands."""
    import json
    from dataclasses import asdict

    from rich.table import Table

    from placement.cli.consoles import err, out
    from placement.core.instance.loading import load_instance
    from placement.core.plans.numbers import num
    from placement.measure.agreement import agreement, inside_share

    if str(json_path) == "-":  # the JSON owns standard output; the table goes to standard error
        out = err
    from placement.measure.points import read_measurements

    if json_path is not None:
        from placement.core.plans.output import check_writable, refuse_inputs

        check_writable(json_path)
        refuse_inputs({"--json": json_path}, [*measurements, instance])
    inst = load_instance(instance, calibration)
    rows, skipped = agreement([read_measurements(p) for p in measurements], inst)
    t = Table(title=f"measured vs predicted on {inst.name}'s chips"
              + (f" with {inst.calibration.label}" if inst.calibration else ""))
    for col in ("point", "chip", "model", "conc", "TPOT ms meas / pred", "÷ (p10–p90)", "TTFT ms meas / pred",
                "÷ (p10–p90)"):
        t.add_column(col)

    def cell(ratio, band) -> str:
        if ratio is None:
            return "-"
        mark = "" if band[0] <= ratio <= band[1] else " [red]out[/red]"
        return f"{ratio:.2f} ({band[0]:.2f}–{band[1]:.2f}){mark}"

    for r in rows:
        t.add_row(f"{r.source}#{r.record}", r.chip, r.model, num(r.concurrency, 4),
                  f"{num(r.tpot_ms_measured)} / {num(r.tpot_ms_predicted)}", cell(r.tpot_ratio, r.tpot_band),
                  f"{num(r.ttft_ms_measured, 4)} / {num(r.ttft_ms_predicted, 4)}", cell(r.ttft_ratio, r.ttft_band))
    out.print(t)
    for metric in ("tpot", "ttft"):
        k, n = inside_share(rows, metric)
        if n:
            errs = sorted(abs(1 / (r.tpot_ratio if metric == "tpot" else r.ttft_ratio) - 1) for r in rows
                          if (r.tpot_ratio if metric == "tpot" else r.ttft_ratio) is not None)
            out.print(f"{metric.upper()}: {k} of {n} points inside the p10–p90 band ({100 * k / n:.0f} %; "
                      f"about 80 % expected); median |error| {100 * errs[len(errs) // 2]:.1f} %", highlight=False)
    for why, n in sorted(skipped.items()):
        out.print(f"skipped {n}: {why}", highlight=False)
    if json_path is not None:
        from placement.core.plans.output import write_atomic

        write_atomic(json_path, json.dumps([{**asdict(r), "tpot_inside": r.inside("tpot"),
                                             "ttft_inside": r.inside("ttft")} for r in rows], indent=2) + "\n")


measure_app.command("import")(guarded(import_command))
measure_app.command("compare")(guarded(compare_command))


def calibrate_command(
    measurements: Annotated[list[Path], typer.Argument(help="measurements files (placement measure import --out)")],
    out: Annotated[Path, typer.Option("--out", help="write the calibration overlay here (YAML)")],
    chip: Annotated[list[str] | None, typer.Option("--chip", help="calibrate this chip alone (repeatable; "
                                                                  "default: every chip the points cover)")] = None,
) -> None:
    """Refit the factors and error bands of the chips the measurements cover: a calibration overlay."""
    from rich.table import Table

    from placement.cli.consoles import err
    from placement.cli.consoles import out as console
    from placement.core.plans.output import check_writable
    from placement.measure.points import read_measurements
    from placement.measure.refit import refit

    check_writable(out)
    overlay, reports = refit([read_measurements(p) for p in measurements], only=set(chip) if chip else None)
    doc = overlay.model_dump(mode="json", exclude_none=True, exclude={"source", "sha256"})
    _write(out, _yaml(doc, "# Calibration overlay (placement calibrate): factors and error bands refitted on the "
                           "measurements listed.\n# Use: placement solve INSTANCE --calibration THIS_FILE, or "
                           "`calibration: THIS_FILE` in the instance.\n"), list(measurements))
    if str(out) == "-":  # the overlay owns standard output; the table goes to standard error
        console = err
    t = Table(title=f"calibration overlay {out}")
    for col in ("chip", "points", "factors refitted", "TPOT |err| catalogue → held out",
                "TPOT p10–p90 catalogue → yours", "TTFT |err|", "TTFT p10–p90"):
        t.add_column(col)

    def pct(x) -> str:
        return "-" if x is None else f"{100 * x:.1f} %"

    for r in reports:
        if not r.points:
            t.add_row(r.chip, "0", "-", "-", "-", "-", "-")
            continue
        (c_lo, c_hi), (o_lo, o_hi) = r.spans.get("tpot", ((0, 0), (0, 0)))
        (tc_lo, tc_hi), (to_lo, to_hi) = r.spans.get("ttft", ((0, 0), (0, 0)))
        e, et = r.errors.get("tpot", (None, None)), r.errors.get("ttft", (None, None))
        t.add_row(r.chip, str(r.points), ", ".join(r.freed) or "-", f"{pct(e[0])} → {pct(e[1])}",
                  f"{c_lo:.2f}–{c_hi:.2f} → {o_lo:.2f}–{o_hi:.2f}", f"{pct(et[0])} → {pct(et[1])}",
                  f"{tc_lo:.2f}–{tc_hi:.2f} → {to_lo:.2f}–{to_hi:.2f}")
    console.print(t)
    for r in reports:
        console.print(f"{r.chip}: bands from {r.heldout or 'no held-out points'}", highlight=False)
        for why, n in sorted(r.skipped.items()):
            console.print(f"  skipped {n}: {why}", highlight=False)
        for note in r.notes:
            console.print(f"  {note}", highlight=False)

