"""Reading the files named on the command line that are not instances: plan JSON."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from placement.core.errors import InputError

if TYPE_CHECKING:
    from placement.core.plan import Plan

__all__ = ["read_plan"]


def read_plan(path: Path) -> Plan:
    """A plan written by ``solve --json``; a malformed one is an :class:`InputError` naming the field.

    Examples
    --------
    >>> import json, pathlib, tempfile
    >>> p = pathlib.Path(tempfile.mkdtemp()) / "plan.json"
    >>> _ = p.write_text(json.dumps({"instance": "toy"}))
    >>> read_plan(p)
    Traceback (most recent call last):
    ...
    placement.core.errors.InputError: .../plan.json: status: field required
    """
    from pydantic import ValidationError

    from placement.core.loading import read_document
    from placement.core.plan import Plan

    try:
        return Plan.model_validate(read_document(path))
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        raise InputError(first["msg"].lower(), file=str(path),
                         field=".".join(str(x) for x in first["loc"])) from None
