"""The two consoles of the command line: ``out`` (results, on stdout) and ``err`` (messages and
progress, on stderr).

Imported inside commands only: building a rich console costs a tenth of a second, which
``placement --help`` should not pay.
"""

from __future__ import annotations

import sys

from rich.console import Console

__all__ = ["err", "out", "warn_unreachable"]

# Wide tables when piped (rich would otherwise wrap at 80 columns).
out = Console(width=None if sys.stdout.isatty() else 200)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 200)


def warn_unreachable(graph) -> None:
    """A warning on stderr for each pair of domain-group islands of the fleet graph (:mod:`placement.core.reach`)."""
    from placement.core.reach import islands_sentences

    for sentence in islands_sentences(graph):
        err.print("warning: " + sentence, style="yellow", markup=False, highlight=False, soft_wrap=True)
