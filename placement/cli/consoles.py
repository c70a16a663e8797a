"""The two consoles of the command line: ``out`` (results, on stdout) and ``err`` (messages and
progress, on stderr).

Imported inside commands only: building a rich console costs a tenth of a second, which
``placement --help`` should not pay.
"""

from __future__ import annotations

import sys

from rich.console import Console

__all__ = ["PIPE_WIDTH", "err", "out", "warn", "warn_unreachable"]

#: Columns of a console that is not a terminal: wide enough that no table is cut or wrapped when piped
#: (rich would otherwise fit it to 80 columns); a table is as wide as its cells, not padded to this.
PIPE_WIDTH = 10_000

out = Console(width=None if sys.stdout.isatty() else PIPE_WIDTH)
err = Console(stderr=True, width=None if sys.stderr.isatty() else PIPE_WIDTH)


def warn(sentence: str) -> None:
    """``warning: sentence`` on stderr, verbatim (no markup: it may quote the user's input)."""
    err.print("warning: " + sentence, style="yellow", markup=False, highlight=False, soft_wrap=True)


def warn_unreachable(graph) -> None:
    """A warning on stderr for each pair of domain-group islands of the fleet graph (:mod:`placement.core.instance.reach`)."""
    from placement.core.instance.reach import islands_sentences

    for sentence in islands_sentences(graph):
        warn(sentence)
