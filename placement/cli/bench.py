"""Commands ``bench``, ``generate`` and ``export``: the benchmarking tools of :mod:`placement.bench`
behind the command line.

``bench`` turns its options into a :class:`~placement.bench.options.BenchOptions` record, runs
it, prints the summary (and baseline) tables and writes JSON, markdown and the scaling chart.
"""

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from placement.cli.options import Family, InstanceArg, PlotAxis, comma_list

__all__ = ["bench_command", "export_command", "generate_command", "print_bench"]


def print_bench(console, result: dict) -> None:
    """Failed preparations, the summary table per (instance, solver) and the baselines table."""
    from rich.table import Table

    from placement.bench.report import baseline_rows, summarise, table_rows

    for prep in result["instances"]:
        if prep.get("status") != "ok":
            console.print(f"[red]preparation failed[/red] {prep.get('path')}: {prep.get('error')}", highlight=False)
    tables = [("placement bench", table_rows(summarise(result["cases"])))]
    if result["baselines"]:
        tables.append(("baselines", baseline_rows(result["baselines"])))
    for title, rows in tables:
        t = Table(title=title)
        for h in rows[0]:
            t.add_column(h, justify="left" if h in ("instance", "solver", "status", "method") else "right")
        for r in rows[1:]:
            t.add_row(*r)
        console.print(t)


def _command_line() -> str:
    """The exact command line when run as ``placement``; a library or test caller gets the bare name."""
    from_cli = bool(sys.argv) and Path(sys.argv[0]).name == "placement"
    return " ".join(["placement", *sys.argv[1:]]) if from_cli else "placement bench"


def bench_command(
    instances: Annotated[list[Path] | None, typer.Argument(help="instance files (or use --sizes)")] = None,
    sizes: Annotated[str | None, typer.Option("--sizes", help="generate fleets of these domain counts, e.g. "
                                                              "10,100,1000")] = None,
    solvers: Annotated[str, typer.Option("--solvers", help="comma list: cbc,highs or PuLP names")] = "cbc,highs",
    repeat: Annotated[int, typer.Option("--repeat", help="runs per instance and solver")] = 1,
    time_limit: Annotated[float | None, typer.Option("--time-limit", help="solver seconds per case")] = 60.0,
    gap: Annotated[float | None, typer.Option("--gap", help="relative MIP gap to stop at (default: prove "
                                                            "optimality)")] = None,
    threads: Annotated[int | None, typer.Option("--threads", help="solver threads")] = None,
    json_path: Annotated[Path | None, typer.Option("--json", help="write all records here")] = None,
    plot: Annotated[Path | None, typer.Option("--plot", help="scaling plot PNG")] = None,
    plot_x: Annotated[PlotAxis, typer.Option("--plot-x", help="x axis of the plot")] = PlotAxis.domains,
    title: Annotated[str | None, typer.Option("--title", help="plot title")] = None,
    markdown_path: Annotated[Path | None, typer.Option("--markdown", help="write the tables as markdown here")]
    = None,
    baselines: Annotated[str | None, typer.Option("--baselines", help="comma list: exhaustive,greedy,lp")] = None,
    exhaustive_budget: Annotated[float, typer.Option("--exhaustive-budget", help="seconds")] = 60.0,
    workers: Annotated[int, typer.Option("--workers", help="jobs in parallel (1 = clean timings)")] = 1,
    memory_limit: Annotated[float | None, typer.Option("--memory-limit", help="GB of address space per job "
                                                                              "(0 = none)")] = 12.0,
    prepare_limit: Annotated[float | None, typer.Option("--prepare-limit", help="seconds per candidate "
                                                                                "generation (default 1800)")]
    = None,
    family: Annotated[Family, typer.Option("--family", help="with --sizes: fleet family")] = Family.leaf_spine,
    chip_types: Annotated[int, typer.Option("--chip-types", help="with --sizes")] = 8,
    chips: Annotated[str | None, typer.Option("--chips", help="with --sizes: chip names (overrides "
                                                              "--chip-types)")] = None,
    classes: Annotated[int, typer.Option("--classes", help="with --sizes")] = 6,
    model: Annotated[str, typer.Option("--model", help="with --sizes")] = "llama-3.1-70b",
    modes: Annotated[str | None, typer.Option("--modes", help="with --sizes: comma list (default all)")] = None,
    seed: Annotated[int, typer.Option("--seed", help="with --sizes")] = 0,
    instances_dir: Annotated[Path | None, typer.Option("--instances-dir", help="where generated instances go "
                                                                               "(default: next to --json)")]
    = None,
) -> None:
    """Benchmark solvers on instances: build and solve time, status, gap, model size, peak memory."""
    from placement.bench.options import BenchOptions, run_bench
    from placement.bench.plots import scaling_plot
    from placement.bench.report import report_markdown, summarise
    from placement.cli.consoles import out
    from placement.cli.studies import ProgressBar
    from placement.core.instance.errors import InputError
    from placement.core.plans.output import write_atomic

    try:
        size_list = tuple(int(s) for s in comma_list(sizes))
    except ValueError:
        raise InputError(f"expected comma-separated integers, got {sizes!r}", field="--sizes") from None
    extra = {} if prepare_limit is None else {"prepare_limit_s": prepare_limit}
    options = BenchOptions(
        instances=tuple(str(p) for p in instances or []), sizes=size_list, solvers=tuple(comma_list(solvers)),
        repeat=repeat, time_limit_s=time_limit, gap=gap, threads=threads, baselines=tuple(comma_list(baselines)),
        exhaustive_budget_s=exhaustive_budget, workers=workers, memory_limit_gb=memory_limit,
        family=str(family), chip_types=chip_types, chips=tuple(comma_list(chips)), classes=classes, model=model,
        modes=tuple(comma_list(modes)), seed=seed, instances_dir=instances_dir, json_path=json_path,
        markdown_path=markdown_path, plot_path=plot, plot_x=str(plot_x), title=title, **extra)
    console = out

    with ProgressBar("bench", None) as bar:
        result = run_bench(options, command=_command_line(), progress=bar)
    print_bench(console, result)
    if json_path is not None:
        write_atomic(json_path, json.dumps(result, indent=2, default=str))
        console.print(f"wrote {json_path}", highlight=False)
    if markdown_path is not None:
        write_atomic(markdown_path, report_markdown(result))
        console.print(f"wrote {markdown_path}", highlight=False)
    summary = summarise(result["cases"])
    if plot is not None and summary:
        scaling_plot(summary, plot, x=str(plot_x), title=title)
        console.print(f"wrote {plot}", highlight=False)


def generate_command(
    domains: Annotated[int, typer.Option("--domains", help="scale-up domains in the fleet")],
    out_path: Annotated[Path, typer.Option("--out", help="instance YAML to write")],
    chip_types: Annotated[int, typer.Option("--chip-types", help="number of chip types (1..18)")] = 8,
    classes: Annotated[int, typer.Option("--classes", help="traffic classes (1..20)")] = 6,
    family: Annotated[Family, typer.Option("--family", help="fleet family")] = Family.leaf_spine,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    model: Annotated[str, typer.Option("--model", help="catalogue model")] = "llama-3.1-70b",
    load: Annotated[float | None, typer.Option("--load", help="fraction of the fleet the demand needs "
                                                              "(default 0.3)")] = None,
    modes: Annotated[str | None, typer.Option("--modes", help="comma list (default: all)")] = None,
    groups: Annotated[int | None, typer.Option("--groups", help="uniform family: leaves (1 = one group)")] = None,
    chips: Annotated[str | None, typer.Option("--chips", help="comma list of chip names (overrides "
                                                              "--chip-types)")] = None,
) -> None:
    """Write a seeded benchmark instance (fleet family, traffic mix, calibrated rates)."""
    from placement.bench.generate import DEFAULT_LOAD, build_instance, write_instance
    from placement.cli.consoles import err, out
    from placement.core.instance.errors import InputError
    from placement.core.instance.schema import MODES

    mode_list = comma_list(modes) or list(MODES)
    bad = [m for m in mode_list if m not in MODES]
    if bad:
        raise InputError(f"expected modes among {', '.join(MODES)}, got {bad[0]!r}", field="--modes")
    if groups is not None and family != Family.uniform:
        raise InputError("--groups applies to --family uniform only", field="--groups")
    options = {"groups": groups} if groups is not None else None
    doc = build_instance(domains=domains, chip_types=comma_list(chips) or chip_types, classes=classes,
                         family=str(family), seed=seed, model=model, modes=mode_list,
                         load=DEFAULT_LOAD if load is None else load, fleet_options=options)
    write_instance(doc, out_path)
    hw = doc["hardware"]
    console = err if str(out_path) == "-" else out
    console.print(f"[green]wrote[/green] {out_path}: {domains} domains in {len(hw['domains'])} groups, "
                  f"{len(hw['switches'])} switches, {len(doc['workload']['classes'])} classes, model {model}",
                  highlight=False)


def export_command(
    instance: InstanceArg,
    lp: Annotated[Path | None, typer.Option("--lp", help="write the model in CPLEX LP format here")] = None,
    mps: Annotated[Path | None, typer.Option("--mps", help="write the model in (free) MPS format here")] = None,
) -> None:
    """Write the instance's MILP as LP and/or MPS (deterministic names) for external solvers."""
    from placement.bench.export import export_instance
    from placement.cli.consoles import out
    from placement.core.instance.loading import load_instance
    from placement.core.plans.output import refuse_inputs

    refuse_inputs({"--lp": lp, "--mps": mps}, [instance])
    inst = load_instance(instance)
    stats = export_instance(inst, lp=lp, mps=mps, source=str(instance))
    console = out
    for p in stats["files"]:
        console.print(f"[green]wrote[/green] {p} ({p.stat().st_size:,} bytes)", highlight=False)
    console.print(f"{stats['variables']:,} variables ({stats['integer_variables']:,} integer), "
                  f"{stats['constraints']:,} constraints, {stats['nonzeros']:,} nonzeros; "
                  f"candidates {stats['candidates_s']:.2f} s, export {stats['export_s']:.2f} s", highlight=False)
