"""Writing a converted schema, or checking that the committed one is still what the conversion gives."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def emit(schema: dict, out: Path | None, check: bool, source: Path, detail: str = "") -> int:
    """Write ``schema`` to ``out`` (stdout without one), or with ``check`` exit 1 if ``out`` differs from it."""
    text = json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
    if check:
        if out is None or not out.exists() or out.read_text(encoding="utf-8") != text:
            print(f"{out}: differs from the conversion of {source}", file=sys.stderr)
            return 1
        return 0
    if out:
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out} ({len(text)} bytes){detail}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
