"""Fuzzing the front door: hypothesis-generated instances through load → solve → verify.

* **Valid instances** (small fleets of 1–3 domain groups of catalogue chips, 1–3 classes with
  random SLOs, rates and token counts, random modes, objective, limits, precision, draft and
  measured capacities) must load; ``solve`` (CBC, 10 s limit) must return a status, never
  raise; a returned plan must pass the independent verifier; an infeasible one must carry a
  diagnosis.
* **Invalid instances** (a valid one with one mutation that no schema accepts: an unknown key,
  NaN/inf, a negative number, a list or mapping where a scalar belongs, a required key removed)
  must raise :class:`~placement.core.instance.errors.InputError` — never another exception.
* **Mangled files** (the YAML/JSON text of a valid instance, truncated or with bytes spliced
  in) must load or raise ``InputError``.

This file runs the bounded profile (derandomised, ~20 examples per property, for CI);
``benchmarks/fuzz_long.py`` runs the same strategies and checks for many more examples.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from placement.core.instance.context import Context
from placement.core.instance.errors import InputError
from placement.core.instance.loading import _in_size_chain, load_instance, parse_instance
from placement.core.instance.schema import MODES
from placement.core.pipeline.deadline import TimeLimitError
from placement.core.pipeline.solve import solve
from placement.core.verify.verifier import verify
from topology.chips import load_chip_catalog

CHIPS = sorted(load_chip_catalog())
#: Small and medium models: big ones only add candidate-generation time, not new code paths.
MODELS = ["llama-3.2-1b", "llama-3.1-8b", "llama-2-7b", "gpt-oss-20b", "qwen3-32b"]
CLASS_NAMES = ["chat", "code", "batch", "rag", "agent"]
TIME_LIMIT_S = 10.0

BOUNDED = {"deadline": None, "derandomize": True, "database": None, "print_blob": True,
           "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much]}


# ---- strategies --------------------------------------------------------------------------------


def _finite(lo: float, hi: float):
    return st.floats(min_value=lo, max_value=hi, allow_nan=False, allow_infinity=False)


@st.composite
def traffic_class(draw, name: str) -> dict:
    loose = draw(st.integers(0, 3)) > 0  # mostly SLOs a fleet can meet, so plans get verified
    c = {
        "name": name,
        "rate_rps": draw(_finite(0.01, 50) if loose else _finite(0.01, 500)),
        "prompt_tokens": draw(st.integers(1, 30_000)),
        "output_tokens": draw(st.integers(1, 3_000)),
        "ttft_ms": draw(_finite(500, 60_000) if loose else _finite(1, 60_000)),
        "tpot_ms": draw(_finite(20, 500) if loose else _finite(0.01, 500)),
    }
    if draw(st.booleans()):
        c["cached_prefix_tokens"] = draw(st.integers(0, 60_000))
        c["prefix_cached_on_decode"] = draw(st.booleans())
    if draw(st.integers(0, 3)) == 0:
        c["slo_percentile"] = draw(st.sampled_from(["mean", "p50", "p90", "p99"]))
        c["tpot_percentile"] = draw(st.sampled_from(["mean", "p90", "p99"]))
    for length, shape in (("prompt_tokens", "prompt_lengths"), ("output_tokens", "output_lengths")):
        kind = draw(st.integers(0, 5))
        if kind == 0:
            c[shape] = {"cv": draw(_finite(0.0, 3.0))}
        elif kind == 1:  # two points around the class's length: their mean is it (to a token)
            n, spread = c[length], draw(_finite(0.05, 0.9))
            c[shape] = {"histogram": [[max(1, round(n * (1 - spread))), 1], [max(1, round(n * (1 + spread))), 1]]}
            c[length] = max(1, round(sum(t for t, _ in c[shape]["histogram"]) / 2))
    return c


@st.composite
def valid_documents(draw, big: bool = False) -> dict:
    """A valid instance document (dict).

    ``big=False`` (the bounded profile) keeps scale-up domains at ≤ 16 chips so that candidate
    generation stays well under a second; ``big=True`` (the long profile) also draws the
    catalogue's full domain sizes (72-chip NVL72, 256-chip LPX racks, ...).
    """
    catalogue = load_chip_catalog()
    model = draw(st.sampled_from(MODELS))
    names = draw(st.lists(st.sampled_from(CLASS_NAMES), min_size=1, max_size=3, unique=True))
    classes = [draw(traffic_class(n)) for n in names]
    switches = draw(st.sampled_from([[], ["s0"], ["s0", "s1"]]))
    chips = draw(st.lists(st.sampled_from(CHIPS), min_size=1, max_size=3))
    domains = []
    for i, chip in enumerate(chips):
        d = {"name": f"g{i}", "chip": chip, "count": draw(st.integers(1, 4))}
        limit = catalogue[chip].scale_up_domain_chips
        size = draw(st.sampled_from([None, 1, 2, 3, 4, 8, 16, limit] if big else [1, 2, 3, 4, 8, 16]))
        if size is not None and size <= limit:
            d["chips_per_domain"] = size
        elif not big:
            d["chips_per_domain"] = min(limit, 16)
        if switches and draw(st.integers(0, 4)):  # mostly attached
            d["switch"] = draw(st.sampled_from(switches))
            if draw(st.integers(0, 3)) == 0:
                d["uplink_gb_per_s"] = draw(_finite(0.1, 5_000))
        if draw(st.integers(0, 4)) == 0:
            d["usd_per_hour_per_chip"] = draw(_finite(0.01, 200))
        domains.append(d)
    hardware: dict = {"domains": domains}
    if switches:
        hardware["switches"] = switches
    if len(switches) == 2 and draw(st.booleans()):
        hardware["links"] = [{"source": "s0", "target": "s1", "bandwidth_gb_per_s": draw(_finite(0.1, 2_000)),
                              "latency_us": draw(_finite(0, 50))}]
    doc: dict = {"name": "fuzz", "model": model, "workload": {"classes": classes}, "hardware": hardware,
                 "modes": draw(st.lists(st.sampled_from(MODES), min_size=1, max_size=3, unique=True)),
                 "objective": draw(st.sampled_from(["cost", "power", "chips"]))}
    if draw(st.integers(0, 3)) == 0:
        doc["precision"] = {"weights": draw(st.sampled_from(["fp4", "fp8", "bf16"])),
                            "kv": draw(st.sampled_from(["fp4", "fp8", "bf16"]))}
    weights = doc.get("precision", {}).get("weights", "bf16")
    if not all(catalogue[c].runs(weights) for c in chips):  # FP8-only chips have no BF16 rate
        doc["precision"] = {**doc.get("precision", {}), "weights": "fp8"}
    limits = {}
    if draw(st.integers(0, 3)) == 0:
        limits["power_kw"] = draw(_finite(0.1, 2_000))
    if draw(st.integers(0, 3)) == 0:
        limits["budget_usd_per_hour"] = draw(_finite(0.1, 2_000))
    if limits:
        doc["limits"] = limits
    if model == "llama-3.1-8b" and draw(st.integers(0, 2)) == 0:
        doc["draft"] = {"model": "eagle3-llama-3.1-8b",
                        "acceptance": draw(st.lists(_finite(0.05, 0.95), min_size=1, max_size=4)),
                        "placement": draw(st.sampled_from(["any", "colocated", "remote"]))}
    if draw(st.integers(0, 3)) == 0:
        measured = []
        for chip in sorted(set(chips)):
            sizes = [d.get("chips_per_domain") or catalogue[chip].scale_up_domain_chips
                     for d in domains if d["chip"] == chip]
            on_chain = [n for n in (1, 2, 4, 8) if all(_in_size_chain(n, size) for size in sizes)]
            for c in names:
                if draw(st.booleans()):
                    measured.append({"chip": chip, "class": c, "max_rps_per_replica": draw(_finite(0.05, 100)),
                                     "chips": draw(st.sampled_from(on_chain))})
        if measured:
            doc["measured_capacity"] = measured
            doc["only_measured"] = draw(st.booleans())
    return doc


def _paths(node, prefix=()):
    """(path, value) of every node; paths are tuples of keys and indices."""
    yield prefix, node
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _set(doc, path, value):
    node = doc
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value


REQUIRED = {("name",), ("model",), ("workload",), ("hardware",), ("workload", "classes"), ("hardware", "domains")}


#: Demand scales of the small-rate family: solves once failed (exit 5, false infeasible) at some of them.
SMALL_RATE_SCALES = [1e-4, 1e-5, 1e-6, 1e-9, 1e-10, 1e-12]


@st.composite
def small_rate_documents(draw) -> tuple[dict, str]:
    """(a valid document with every class's rate scaled down by one of :data:`SMALL_RATE_SCALES`, backend)."""
    doc = draw(valid_documents())
    scale = draw(st.sampled_from(SMALL_RATE_SCALES))
    # 1e-12 req/s is the smallest rate (and measured capacity) an instance may state.
    for c in doc["workload"]["classes"]:
        c["rate_rps"] = max(c["rate_rps"] * scale, 1e-12)
    for m in doc.get("measured_capacity", []):
        m["max_rps_per_replica"] = max(m["max_rps_per_replica"] * scale, 1e-12)
    return doc, draw(st.sampled_from(["cbc", "highs"]))


@st.composite
def invalid_documents(draw) -> tuple[dict, str]:
    """A valid document with one mutation no schema accepts, and what the mutation was."""
    doc = json.loads(json.dumps(draw(valid_documents())))  # a deep copy
    kind = draw(st.sampled_from(["unknown-key", "nan", "inf", "negative", "container", "missing", "wrong-type"]))
    nodes = list(_paths(doc))
    mappings = [p for p, v in nodes if isinstance(v, dict)]
    numbers = [p for p, v in nodes if isinstance(v, (int, float)) and not isinstance(v, bool)]
    scalars = [p for p, v in nodes if p and not isinstance(v, (dict, list))]
    if kind == "unknown-key":
        path = draw(st.sampled_from(mappings))
        node = doc
        for k in path:
            node = node[k]
        node[draw(st.sampled_from(["tpot_s", "gpus", "colour", "rate", "Name", "bandwidth"]))] = 1
    elif kind in ("nan", "inf", "negative"):
        path = draw(st.sampled_from(numbers))
        old = doc
        for k in path:
            old = old[k]
        value = {"nan": math.nan, "inf": draw(st.sampled_from([math.inf, -math.inf])),
                 "negative": -abs(old) - draw(st.sampled_from([1, 0.5, 1e6]))}[kind]
        _set(doc, path, value)
    elif kind == "container":
        _set(doc, draw(st.sampled_from(scalars)), draw(st.sampled_from([[1], {"x": 1}, [], {}])))
    elif kind == "wrong-type":
        path = draw(st.sampled_from(numbers))
        _set(doc, path, draw(st.sampled_from(["fast", "10 req/s", "", "1,5"])))
    else:
        path = draw(st.sampled_from(sorted(REQUIRED)))
        node = doc
        for k in path[:-1]:
            node = node[k]
        del node[path[-1]]
    return doc, kind


@st.composite
def mangled_texts(draw) -> tuple[str, str]:
    """(suffix, text): a valid instance as YAML or JSON, then truncated or with bytes spliced in."""
    doc = draw(valid_documents())
    suffix = draw(st.sampled_from([".yaml", ".json"]))
    text = yaml.safe_dump(doc, sort_keys=False) if suffix == ".yaml" else json.dumps(doc, indent=1)
    cut = draw(st.integers(0, len(text)))
    how = draw(st.sampled_from(["truncate", "splice", "delete"]))
    if how == "truncate":
        text = text[:cut]
    elif how == "splice":
        text = text[:cut] + draw(st.sampled_from(["\t", ":", "- ", "{", "]", "&a ", "*a", "!!python/object:os.system",
                                                   "\x00", "'", "---\n", ".nan", "1e999"])) + text[cut:]
    else:
        text = text[:cut] + text[cut + draw(st.integers(1, 20)):]
    return suffix, text


# ---- checks (shared with benchmarks/fuzz_long.py) ------------------------------------------------


def check_valid(doc: dict, time_limit_s: float = TIME_LIMIT_S, backend: str = "cbc") -> str:
    """Load, solve and verify a valid document; returns the plan status (a time limit says whether it left a
    verified plan), raises AssertionError on a bug."""
    inst = parse_instance(doc, source="fuzz.yaml")  # a valid document must load
    try:
        plan = solve(inst, backend=backend, time_limit_s=time_limit_s, source="fuzz.yaml")
    except TimeLimitError:  # candidate generation used the whole limit: the CLI's exit 4, by design
        return "time_limit (spent before the solver)"
    assert plan.status in ("optimal", "feasible", "infeasible", "time_limit", "error"), plan.status
    assert not plan.violations, f"the verifier rejected the solver's plan: {plan.violations}"
    if plan.pools:
        assert plan.status in ("optimal", "feasible", "time_limit"), plan.status
        violations = verify(Context.of(inst, "fuzz.yaml"), plan)
        assert violations == [], violations
        assert plan.verified
    if plan.status == "infeasible":
        assert plan.diagnosis, "an infeasible plan without a diagnosis"
        assert not any(d.startswith(("diagnosis failed", "elastic diagnosis failed")) for d in plan.diagnosis), \
            plan.diagnosis
    if plan.status == "error":
        # Only a solver failure may end here (a verifier rejection was asserted above).
        assert plan.message and "verifier" not in plan.message, plan.message
    if plan.status == "time_limit":  # a limit reached with a verified plan is an answer; one without is not
        return "time_limit (verified plan)" if plan.pools else "time_limit (no plan)"
    return plan.status


def check_invalid(doc: dict) -> str:
    """An invalid document must raise InputError naming a file; returns the error's field."""
    with pytest.raises(InputError) as e:
        parse_instance(doc, source="fuzz.yaml")
    assert str(e.value).startswith("fuzz.yaml"), str(e.value)
    return e.value.field or "<document>"


def check_text(path: Path) -> str:
    """A mangled file loads or raises InputError; anything else is a bug."""
    try:
        load_instance(path)
    except InputError as e:
        assert str(path) in str(e), str(e)
        return "input-error"
    return "loaded"


# ---- the bounded profile -------------------------------------------------------------------------

OUTCOMES: Counter = Counter()


@settings(max_examples=20, **BOUNDED)
@given(valid_documents())
def test_valid_instances_solve_and_verify(doc):
    OUTCOMES[check_valid(doc)] += 1


@settings(max_examples=25, **BOUNDED)
@given(invalid_documents())
def test_invalid_instances_give_input_errors(case):
    doc, _ = case
    check_invalid(doc)


@settings(max_examples=25, **BOUNDED)
@given(mangled_texts())
def test_mangled_files_load_or_give_input_errors(tmp_path_factory, case):
    suffix, text = case
    path = tmp_path_factory.mktemp("fuzz") / f"instance{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    check_text(path)


# ---- regression tests: bugs the fuzzer found --------------------------------------------------------


def test_regression_measured_replica_off_the_size_chain_is_an_input_error():
    """Found by the bounded profile: ``chips: 2`` measured on a100-80gb domains of 3 chips passed
    loading, then ``solvers.packing.check_packable`` raised ValueError out of ``solve()`` (the CLI
    said "internal error", exit 1). Now the loader rejects it, naming the field."""
    doc = {
        "name": "fuzz", "model": "llama-3.2-1b", "modes": ["aggregated"],
        "workload": {"classes": [{"name": "code", "rate_rps": 1.0, "prompt_tokens": 1, "output_tokens": 1,
                                  "ttft_ms": 5.0, "tpot_ms": 1.0}]},
        "hardware": {"domains": [{"name": "g0", "chip": "a100-80gb", "count": 1, "chips_per_domain": 3}]},
        "measured_capacity": [{"chip": "a100-80gb", "class": "code", "max_rps_per_replica": 1.0, "chips": 2}],
    }
    with pytest.raises(InputError, match=r"^fuzz\.yaml: measured_capacity\[0\]\.chips: 2 chips per replica do not "
                                         r"pack into a100-80gb domains of 3 chips"):
        parse_instance(doc, source="fuzz.yaml")
    for ok in (1, 3, 6):  # sizes on the chain load and solve
        doc["measured_capacity"][0]["chips"] = ok
        assert check_valid(doc) in ("optimal", "infeasible")


# ---- the attack catalogue of issue 15: small rates, on both backends ---------------------------------


def _one_class_on_16_h100(rate_rps: float) -> dict:
    return {"name": "small", "model": "llama-3.1-8b", "modes": ["aggregated", "pd"],
            "workload": {"classes": [{"name": "chat", "rate_rps": rate_rps, "prompt_tokens": 1000,
                                      "output_tokens": 200, "ttft_ms": 2000, "tpot_ms": 50}]},
            "hardware": {"domains": [{"name": "h", "chip": "h100", "count": 2, "chips_per_domain": 8}]}}


_SMALL_RATE_CASES = [(r, b) for r in SMALL_RATE_SCALES for b in ("cbc", "highs")]


@pytest.mark.parametrize(("rate_rps", "backend"), _SMALL_RATE_CASES)
def test_small_rates_solve_and_verify(rate_rps, backend):
    assert check_valid(_one_class_on_16_h100(rate_rps), backend=backend) == "optimal"


@settings(max_examples=10, **BOUNDED)
@given(small_rate_documents())
def test_small_rate_instances_solve_and_verify(case):
    doc, backend = case
    check_valid(doc, backend=backend)
