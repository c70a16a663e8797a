"""Command ``examples``: the shipped instances (and the closed loop's sample measurements), listed or copied.

A wheel user has no repository checkout; the instances ship as package data (``placement/instances``).
``placement examples`` lists them with their descriptions; ``--copy DIR`` writes them into ``DIR``
(created if missing) — every file or none: a file already there is an error naming it, nothing is
overwritten.
"""

from pathlib import Path
from typing import Annotated

import typer

__all__ = ["examples_command", "shipped_files"]

#: The folder the instances ship in (the repository's ``instances`` is a link to it).
SHIPPED = Path(__file__).resolve().parents[1] / "instances"


def shipped_files() -> list[Path]:
    """Every shipped example file, relative to :data:`SHIPPED` (instances, their profiles, sample measurements)."""
    return sorted(p.relative_to(SHIPPED) for p in SHIPPED.rglob("*")
                  if p.is_file() and p.suffix in (".yaml", ".csv", ".json", ".md") and "__pycache__" not in p.parts)


def examples_command(
    copy: Annotated[Path | None, typer.Option("--copy", help="copy every example into this folder (created if "
                                                             "missing; existing files are never overwritten)")] = None,
) -> None:
    """List the shipped example instances, or copy them (and the sample measurements) into a folder."""
    from rich.table import Table

    from placement.cli.consoles import out
    from placement.core.instance.errors import InputError
    from placement.core.instance.loading import read_document
    from placement.core.plans.output import write_bytes_atomic

    files = shipped_files()
    if copy is None:
        t = Table(title=f"shipped examples ({SHIPPED})")
        t.add_column("file")
        t.add_column("what it is")
        for rel in files:
            if rel.suffix == ".yaml":
                doc = read_document(SHIPPED / rel)
                t.add_row(str(rel), str(doc.get("description", "")) if isinstance(doc, dict) else "")
            elif rel.suffix != ".md":
                t.add_row(str(rel), "data for the instances (a profile, or measurements: docs/closed-loop.md)")
        out.print(t)
        out.print("copy them: placement examples --copy DIR; then placement solve DIR/melange-toy.yaml", highlight=False)
        return
    if copy.exists() and not copy.is_dir():
        raise InputError("expected a folder", field="--copy")
    there = [str(copy / rel) for rel in files if (copy / rel).exists()]
    if there:
        raise InputError(f"{there[0]} exists (and {len(there) - 1} more); copy into an empty folder, nothing was "
                         "written" if len(there) > 1 else f"{there[0]} exists; nothing was written", field="--copy")
    for rel in files:
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(copy / rel, (SHIPPED / rel).read_bytes())
    out.print(f"copied {len(files)} files to {copy}", highlight=False)
