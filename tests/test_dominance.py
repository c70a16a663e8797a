"""solvers.dominance: the vectorised pass keeps exactly what the pairwise definition keeps."""

from __future__ import annotations

import numpy as np
import pytest

from solvers.dominance import Columns, Row, dominates, undominated


def _sequential(cols: Columns) -> list[int]:
    """Visit the columns in order with the pairwise definition (what undominated must reproduce)."""
    rows = cols.rows()
    survivors: list[int] = []
    for x in range(len(cols)):
        if not any(dominates(rows[y], rows[x]) for y in survivors):
            survivors = [y for y in survivors if not dominates(rows[x], rows[y])] + [x]
    return sorted(survivors)


def _random_columns(rng: np.random.Generator, n: int, parts: int, q: int, r: int, s: int) -> Columns:
    # Few distinct values, so that ties, equal columns and multiples occur.
    return Columns.of(units=rng.choice([1, 2, 4, 8, 72], size=(n, parts)),
                      supply=rng.choice([1.0, 2.0, 4.0, 8.0], size=(n, q)),
                      load=rng.choice([0.0, 1e9, 2e9], size=(n, r)),
                      limit=rng.choice([4e-6, 1e-5, np.inf], size=(n, s)),
                      rank=rng.permutation(n))


@pytest.mark.parametrize("block", [1, 5, 64])
@pytest.mark.parametrize(("parts", "q", "r", "s"), [(1, 1, 0, 0), (2, 1, 1, 1), (1, 3, 0, 0), (2, 2, 2, 1)])
@pytest.mark.parametrize("seed", range(8))
def test_undominated_equals_the_pairwise_definition(seed, parts, q, r, s, block):
    cols = _random_columns(np.random.default_rng(seed), 150, parts, q, r, s)
    kept = undominated(cols, block=block)
    assert kept == _sequential(cols)
    assert 0 < len(kept) < len(cols)


@pytest.mark.parametrize("seed", range(5))
def test_every_dropped_column_is_dominated_by_a_kept_one(seed):
    """Exact values: dominance is transitive, so what goes has a survivor that replaces it."""
    cols = _random_columns(np.random.default_rng(100 + seed), 120, 2, 2, 1, 1)
    rows, kept = cols.rows(), undominated(cols)
    for x in set(range(len(cols))) - set(kept):
        assert any(dominates(rows[y], rows[x]) for y in kept)


def test_of_identical_columns_the_lowest_rank_stays():
    cols = Columns.of(units=[[2], [2], [2]], supply=[[3.0], [3.0], [3.0]], rank=[2, 0, 1])
    assert undominated(cols) == [1]


def test_copies_must_fit_part_by_part():
    """Two copies of (2, 2) fit in (4, 8) (the smaller ratio); none fit in (4, 5), whatever they serve."""
    small = Row(units=(2, 2), supply=(5.0,))
    assert dominates(small, Row(units=(4, 8), supply=(10.0,)))
    assert not dominates(small, Row(units=(4, 8), supply=(10.5,)))
    assert not dominates(small, Row(units=(4, 5), supply=(1.0,)))


def test_load_and_limits_count_against_a_dominator():
    x = Row(units=(2,), supply=(4.0,), load=(2.0,), limit=(1e-5,))
    assert dominates(Row((1,), (2.0,), (1.0,), (1e-5,)), x)
    assert not dominates(Row((1,), (2.0,), (1.5,), (1e-5,)), x)  # two copies carry 3 > 2
    assert not dominates(Row((1,), (2.0,), (1.0,), (4e-6,)), x)  # a stricter latency limit
