"""``placement init``: a starter instance."""

from __future__ import annotations

__all__ = ["init_command"]


def init_command() -> None:
    """Write a starter instance."""
