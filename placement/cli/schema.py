"""``placement schema instance|plan [--markdown] [--out F]``: the JSON Schema of a format, or the instance reference.

The files in ``schemas/`` and ``docs/instance-format.md`` are this command's output
(``tests/test_schema.py`` checks they are up to date)::

    placement schema instance --out schemas/instance.schema.json
    placement schema plan --out schemas/plan.schema.json
    placement schema instance --markdown --out docs/instance-format.md
"""

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from placement.core.instance.errors import InputError

__all__ = ["SchemaKind", "schema_command"]


class SchemaKind(StrEnum):
    """Which format's schema ``schema`` prints."""

    instance = "instance"
    plan = "plan"


def schema_command(
    kind: Annotated[SchemaKind, typer.Argument(help="instance | plan")],
    out: Annotated[Path | None, typer.Option("--out", help="write here (default and '-': standard output)")] = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="the field reference in Markdown (instance only)")]
    = False,
) -> None:
    """Print the JSON Schema of the instance or plan format (or the instance reference in Markdown)."""
    from placement.core.plans.json_schema import instance_markdown, schema_json
    from placement.core.plans.output import write_atomic

    if markdown and kind != SchemaKind.instance:
        raise InputError("--markdown is the instance reference; expected `placement schema instance --markdown`",
                         field="--markdown")
    text = instance_markdown() if markdown else schema_json(str(kind))
    write_atomic("-" if out is None else out, text)
