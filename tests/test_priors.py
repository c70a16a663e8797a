"""Priors with ranges for uncalibrated chips, and the comparison at either end (issue 30, item 4)."""

from __future__ import annotations

from typer.testing import CliRunner

from costmodels.priors import at_prior, prior_peers, prior_range
from placement.cli.app import app
from placement.core.instance.context import Context
from placement.core.instance.loading import load_instance
from placement.studies.priors import prior_chips, sensitivity, with_priors
from topology.chips import load_chip_catalog

runner = CliRunner()


def test_ranges_come_from_calibrated_peers_and_bracket_the_catalogue():
    cat = load_chip_catalog()
    assert {c.name for c in prior_peers(cat["trainium3"], cat)} == {"b200", "h100", "h200", "mi300x", "mi355x"}
    assert {c.name for c in prior_peers(cat["lp30"], cat)} == {"groq-lpu-v1", "wse3"}  # SRAM peers only
    for name in ("rubin", "trainium3", "bertha", "corsair", "lp30"):
        r = prior_range(cat[name], cat)
        for field, (lo, nom, hi) in r.items():
            if field in ("step_overhead_s", "layer_overhead_s"):
                continue  # one pair, compared whole below
            assert lo <= nom <= hi, (name, field)
        (t0, t1, t2), (l0, l1, l2) = r["step_overhead_s"], r["layer_overhead_s"]
        assert t0 + 80 * l0 >= t1 + 80 * l1 >= t2 + 80 * l2, name  # the fixed cost of an 80-layer step
        assert any((c.step_overhead_s, c.layer_overhead_s) == (t2, l2) for c in cat.values()), name  # one chip's
    assert prior_range(cat["b200"], cat) == {}
    assert at_prior(cat["rubin"], cat, "low")["allreduce_efficiency"] == min(
        cat[n].allreduce_efficiency for n in ("b200", "h100", "h200"))


def test_the_low_prior_slows_only_the_uncalibrated_chips():
    inst = load_instance("instances/mixed-fleet.yaml")
    low = Context.of(with_priors(inst, "low")).chips
    nominal = Context.of(inst).chips
    assert set(prior_chips(inst)) == {"bertha", "trainium3"}
    assert low["trainium3"].step_overhead_s > nominal["trainium3"].step_overhead_s
    assert low["b200"] == nominal["b200"] and low["h100"] == nominal["h100"]


def test_a_verdict_that_holds_and_its_costs_move_with_the_prior():
    res = sensitivity(load_instance("instances/trainium-cerebras.yaml"))
    assert [v.level for v in res] == ["low", "nominal", "high"]
    assert all(v.saving > 0 for v in res)  # the mix beats WSE-3 alone at every level
    assert res[0].mix > res[1].mix >= res[2].mix  # pessimistic priors cost more


def test_compare_takes_priors_and_refuses_an_unknown_level():
    r = runner.invoke(app, ["compare", "instances/trainium-cerebras.yaml", "--priors", "low"])
    assert r.exit_code == 0, r.output
    r = runner.invoke(app, ["compare", "instances/trainium-cerebras.yaml", "--priors", "worst"])
    assert r.exit_code == 2 and "--priors" in r.output
