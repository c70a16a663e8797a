"""Candidate generation split into (class, chip type) jobs gives the columns of one process, in order.

The fleet is tiny (a domain of H100 and one of A100, one class, Llama-3.1-8B, attention–FFN pairs and
the prefill replicas they share): both jobs hold pairs whose halves are on different chip types, and
generation takes about half a second.
"""

from __future__ import annotations

import copy
import functools

import pytest

from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.loading import parse_instance
from placement.core.replicas.candidates import generate
from placement.core.replicas.generation import Candidates
from placement.core.replicas.parallel_generation import generation_jobs, parallel_candidates
from placement.studies.executor import generation_executor

#: Two chip types, one class, pd-af (prefill and attention–FFN columns): one leaf each under a spine.
SMALL = {
    "name": "parallel-small", "model": "llama-3.1-8b", "precision": {"weights": "fp8", "kv": "fp8"},
    "modes": ["pd-af"], "objective": "cost",
    "workload": {"classes": [{"name": "chat", "rate_rps": 100.0, "prompt_tokens": 1597, "output_tokens": 341,
                              "ttft_ms": 1500, "tpot_ms": 40}]},
    "hardware": {
        "switches": ["spine", "l0", "l1"],
        "links": [{"source": "l0", "target": "spine", "bandwidth_gb_per_s": 200.0, "latency_us": 1.0},
                  {"source": "l1", "target": "spine", "bandwidth_gb_per_s": 100.0, "latency_us": 1.0}],
        "domains": [{"name": "l0-h100", "chip": "h100", "chips_per_domain": 8, "count": 1, "switch": "l0",
                     "uplink_latency_us": 2.0},
                    {"name": "l1-a100", "chip": "a100-80gb", "chips_per_domain": 8, "count": 1, "switch": "l1",
                     "uplink_latency_us": 2.0}]},
}


@functools.cache
def small_context() -> Context:
    """The context of :data:`SMALL`."""
    return Context.of(parse_instance(copy.deepcopy(SMALL)))


@functools.cache
def one_process() -> Candidates:
    """The small context's candidates from this process alone."""
    return generate(small_context(), workers=1)


def same_candidates(a: Candidates, b: Candidates) -> None:
    """``a`` and ``b`` have the same columns in the same order, the same configurations and counts."""
    assert [c.name for c in a.columns] == [c.name for c in b.columns]
    assert a.columns == b.columns
    assert a.configs == b.configs
    assert (a.generated, a.feasible) == (b.generated, b.feasible)


def test_jobs_are_every_class_on_every_chip_type():
    ctx = small_context()
    classes = list(ctx.instance.workload.classes)
    assert [(c.name, r) for c, r in generation_jobs(ctx, classes)] == [
        (classes[0].name, "h100@8"), (classes[0].name, "a100-80gb@8")]


def test_two_workers_give_the_columns_of_one():
    one = one_process()
    kinds = {c.name.split("|")[1] for c in one.columns}
    assert kinds == {"prefill", "decode-af"}  # both kinds of job ran
    assert {p.resource for c in one.columns if len(c.parts) == 2 for p in c.parts} == {"h100@8", "a100-80gb@8"}
    same_candidates(one, generate(small_context(), workers=2))


def test_one_worker_uses_no_jobs():
    ctx = small_context()
    assert parallel_candidates(ctx, list(ctx.instance.workload.classes), 1) is None


def test_unknown_executor_is_an_input_error():
    with pytest.raises(InputError, match="--executor"), generation_executor("dask"):
        pass


def test_jobs_of_one_context_share_a_memo_per_process_and_leave_none_behind():
    """Jobs run in one process (a serial mapper) share one memo; mapping resets it, so no context and no
    cost-model results outlive the generation; the columns are those of one process."""
    from placement.core.replicas import parallel_generation as pg

    ctx = small_context()
    seen = []

    def serial(fn, items, workers):
        out = []
        for item in items:
            out.append(fn(item))
            seen.append(pg.job_memo(ctx))
        return out

    with pg.job_mapper(serial):
        cands = generate(ctx, workers=2)
    same_candidates(one_process(), cands)
    assert len(seen) == 2 and seen[0] is seen[1] and seen[0]  # one memo, filled by the first job
    assert pg._SHARED_MEMO == [None, {}]
    assert pg.job_memo(ctx) is not seen[0] and pg.job_memo(ctx) == {}  # a new generation starts empty
    pg._SHARED_MEMO[:] = [None, {}]
