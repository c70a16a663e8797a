"""Published speculative-decoding acceptance (costmodels/catalog/speculative.yaml) and its use in instances."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from costmodels import expected_tokens_per_verify
from costmodels.models import load_model_catalog
from costmodels.speculative import load_speculative_catalog, speculative_entry
from placement.core.instance.errors import InputError
from placement.core.instance.loading import load_instance, parse_instance


def test_every_entry_is_sourced_and_names_a_catalogued_target():
    models = load_model_catalog()
    entries = load_speculative_catalog()
    assert entries
    for e in entries.values():
        assert e.source.startswith("https://") and e.derivation and e.dataset, e.name
        assert e.target_model in models, e.name
        assert all(0 < a < 1 for a in e.acceptance), e.name


def test_deepseek_mtp_tokens_per_verify_within_the_published_range():
    e = speculative_entry("deepseek-v3-mtp")
    lo, hi = e.published["acceptance_range"]
    assert 1 + lo <= expected_tokens_per_verify(e.acceptance) <= 1 + hi  # 1.85 … 1.90 tokens per verify


def test_entries_with_an_acceptance_length_reproduce_it_to_the_papers_rounding():
    checked = 0
    for e in load_speculative_catalog().values():
        if "acceptance_length" in e.published:
            assert expected_tokens_per_verify(e.acceptance) == pytest.approx(e.published["acceptance_length"],
                                                                            abs=0.005), e.name
            checked += 1
    assert checked


def _spec_doc():
    inst = load_instance(Path(__file__).resolve().parents[1] / "placement/instances/spec-decode-draft.yaml")
    return inst.model_dump(mode="json", exclude_none=True)


def test_an_instance_selects_a_catalogue_entry_and_its_own_list_overrides():
    doc = _spec_doc()
    doc["draft"] = {"model": "llama-3.2-1b", "acceptance_from": "deepseek-v3-0324-mtp-k7"}
    inst = parse_instance(copy.deepcopy(doc), "x")
    assert inst.draft.acceptance == speculative_entry("deepseek-v3-0324-mtp-k7").acceptance
    assert inst.draft.gamma == 7
    doc["draft"]["acceptance"] = [0.6, 0.5]
    assert parse_instance(doc, "x").draft.acceptance == [0.6, 0.5]


def test_an_unknown_entry_is_an_input_error_naming_the_field():
    doc = _spec_doc()
    doc["draft"] = {"model": "llama-3.2-1b", "acceptance_from": "no-such-entry"}
    with pytest.raises(InputError, match="draft.*no-such-entry"):
        parse_instance(doc, "x")


def test_eagle3_chain_entry_reproduces_every_published_acceptance_length_by_k():
    e = speculative_entry("eagle3-llama-3.1-8b-chain-k7")
    for k, al in enumerate(e.published["acceptance_length_by_k"], start=2):  # K = 2 … 7 draft tokens
        assert expected_tokens_per_verify(e.acceptance[:k]) == pytest.approx(al, abs=0.005), k
    assert load_model_catalog()["eagle3-llama-3.1-8b"]  # the draft the entry measured is catalogued
