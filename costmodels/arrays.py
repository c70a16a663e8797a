"""How the vectorised cost models hand back results: a Python scalar for 0-d input, the array otherwise."""

from __future__ import annotations

import numpy as np

__all__ = ["as_result"]


def as_result(x):
    """Python float (bool for a boolean) when ``x`` is 0-d, the array otherwise.

    Examples
    --------
    >>> as_result(np.float64(2.5)), as_result(np.bool_(True)), as_result(np.arange(2.0))
    (2.5, True, array([0., 1.]))
    """
    x = np.asarray(x)
    if x.ndim:
        return x
    return bool(x) if x.dtype == bool else float(x)
