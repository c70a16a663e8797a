"""The serving framework's step factor (costmodels.framework_fit) and the prefill-regime flag
(costmodels.measured_rows.with_prefill_regime), on a small slice of the shipped measured data."""

from __future__ import annotations

from dataclasses import asdict, replace

import numpy as np
import pytest

from costmodels.calibration import FitFactors, chip_with, predict_rows
from costmodels.framework_fit import fit_joint, framework_of, heldout_joint, predict_joint
from costmodels.measured_rows import map_rows, read_measured_csv, with_prefill_regime
from costmodels.models import load_model_catalog
from topology.chips import load_chip_catalog

#: The synthetic frameworks' step factors: geometric mean 1, so the fit must return them as they are.
TRUE_FACTORS = {"trtllm": 1.25, "vllm": 0.8}
#: Llama-3.1-70B is measured with TRT-LLM and vLLM on both H200 and B200 (every sixth row: a cheap test).
CHIPS = ("b200", "h200")


@pytest.fixture(scope="module")
def setup():
    chips, models = load_chip_catalog(), load_model_catalog()
    raw = [r for r in read_measured_csv() if r.system in ("b200_sxm", "h200_sxm") and "Llama-3.1-70B" in r.model]
    kept, _ = map_rows(raw, chips, models)
    by_chip = {c: [m for m in kept if m.chip == c][::6] for c in CHIPS}
    return chips, models, by_chip


def _catalogue_factors(chip) -> FitFactors:
    return FitFactors(**{k: getattr(chip, k) for k in asdict(FitFactors(0.5, 0.5, 0.0)) if k != "request_overhead_s"})


def _only_tau(chips) -> dict[str, dict]:
    """Fit τ alone from the catalogue's factors (cheap, and the truth is then exactly representable)."""
    return {c: {"factors": ("step_overhead_s",), "reference": _catalogue_factors(chips[c])} for c in CHIPS}


def _synthetic(setup) -> dict[str, list]:
    """Measured TPOT := the catalogue chip's step × the row's framework factor."""
    chips, models, by_chip = setup
    out = {}
    for c, rows in by_chip.items():
        step, _ = predict_rows(chips[c], rows, models)
        out[c] = [replace(m, row=replace(m.row, tpot_ms=s * 1e3 * TRUE_FACTORS[framework_of(m)]))
                  for m, s in zip(rows, step, strict=True)]
    return out


def test_the_slice_has_every_framework_on_both_chips(setup):
    _, _, by_chip = setup
    assert all({framework_of(m) for m in rows} == set(TRUE_FACTORS) for rows in by_chip.values())


def test_joint_fit_recovers_known_framework_factors(setup):
    chips, models, _ = setup
    rows = _synthetic(setup)
    fit = fit_joint(rows, chips, models, _only_tau(chips), rounds=4)  # alternation converged (2 rounds: ±0.5 %)
    for f, s in TRUE_FACTORS.items():
        assert fit.step_factors[f] == pytest.approx(s, rel=0.02), f
    for c in rows:
        assert fit.chips[c].step_overhead_s == pytest.approx(chips[c].step_overhead_s, rel=0.01)
        pred = predict_joint(fit, chips[c], rows[c], models)
        meas = np.array([m.row.tpot_ms for m in rows[c]]) / 1e3
        assert np.median(np.abs(pred / meas - 1.0)) < 0.02


def test_pooled_fit_cannot_absorb_the_framework_spread(setup):
    """The same synthetic data without framework factors: one chip factor set misses by ~20 %."""
    chips, models, _ = setup
    rows = _synthetic(setup)
    c = "h200"
    fit = fit_joint(rows, chips, models, _only_tau(chips), rounds=0)
    assert fit.step_factors == {}
    pred = predict_joint(fit, chips[c], rows[c], models)
    meas = np.array([m.row.tpot_ms for m in rows[c]]) / 1e3
    assert np.median(np.abs(pred / meas - 1.0)) > 0.1


def test_leaving_a_campaign_out_is_a_joint_fit_without_it(setup):
    chips, models, _ = setup
    rows = _synthetic(setup)
    kw = _only_tau(chips)
    gone = ("h200", "vllm")  # two groups, the campaign and the rest: the same fit as campaign-out, half the cost
    held = heldout_joint(rows, chips, models, lambda c, m: (c, framework_of(m)) == gone, kw, rounds=2)
    train = {c: [m for m in rs if (c, framework_of(m)) != gone] for c, rs in rows.items()}
    fit = fit_joint(train, chips, models, kw, rounds=2)
    idx = [i for i, m in enumerate(rows["h200"]) if framework_of(m) == "vllm"]
    expected = predict_joint(fit, chips["h200"], [rows["h200"][i] for i in idx], models)
    np.testing.assert_allclose(held["h200"][idx], expected, rtol=1e-12)
    # the vLLM factor came from b200 alone and still predicts h200's vLLM campaign
    assert np.median(np.abs(held["h200"][idx] / (np.array([rows["h200"][i].row.tpot_ms for i in idx]) / 1e3)
                            - 1.0)) < 0.05  # two rounds: the alternation has converged to ~2 %


def test_waves_take_the_prompts_out_of_the_decode_steps_of_that_campaign_only(setup):
    chips, models, by_chip = setup
    rows = by_chip["h200"]
    waved = with_prefill_regime(rows, {"vllm"})
    long = [i for i, m in enumerate(rows) if m.batch > 1]
    assert any(framework_of(rows[i]) == "vllm" for i in long) and any(framework_of(rows[i]) != "vllm" for i in long)
    for i in long:
        if framework_of(rows[i]) == "vllm":
            assert waved[i].prefill_regime == "waves" and waved[i].prefill_tokens_per_step == 0.0
            assert rows[i].prefill_tokens_per_step > 0.0
        else:
            assert waved[i] == rows[i]
    before, _ = predict_rows(chip_with(chips["h200"], 0.8, 0.6, 2e-3), rows, models)
    after, _ = predict_rows(chip_with(chips["h200"], 0.8, 0.6, 2e-3), waved, models)
    vllm = np.array([framework_of(m) == "vllm" and m.batch > 1 for m in rows])
    assert np.all(after[vllm] < before[vllm]) and np.array_equal(after[~vllm], before[~vllm])


def test_additive_form_recovers_known_per_step_costs(setup):
    chips, models, by_chip = setup
    costs_s = {"trtllm": 0.5e-3, "vllm": -0.5e-3}
    rows = {}
    for c, rs in by_chip.items():
        step, _ = predict_rows(chips[c], rs, models)
        rows[c] = [replace(m, row=replace(m.row, tpot_ms=(s + costs_s[framework_of(m)]) * 1e3))
                   for m, s in zip(rs, step, strict=True)]
    fit = fit_joint(rows, chips, models, _only_tau(chips), rounds=4, additive=True)
    assert fit.additive and fit.factor(None) == 0.0
    for f, v in costs_s.items():
        assert fit.step_factors[f] == pytest.approx(v, abs=0.02e-3), f
