"""Instance files: valid ones load, malformed ones name file, field and expectation."""

from __future__ import annotations

import copy

import pytest
import yaml

from placement.core.instance.errors import InputError
from placement.core.instance.loading import load_instance, parse_instance

BASE = {
    "name": "t",
    "model": "llama-3.1-8b",
    "workload": {"classes": [{"name": "chat", "rate_rps": 2, "prompt_tokens": 500, "output_tokens": 100,
                              "ttft_ms": 1000, "tpot_ms": 50}]},
    "hardware": {"switches": ["tor"],
                 "domains": [{"name": "h100s", "chip": "h100", "count": 2, "switch": "tor"}]},
}


def _with(path: str, value, delete: bool = False) -> dict:
    doc = copy.deepcopy(BASE)
    keys = path.split(".")
    node = doc
    for k in keys[:-1]:
        node = node[int(k)] if k.isdigit() else node[k]
    last = keys[-1]
    if delete:
        del node[last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return doc


def test_base_instance_loads():
    inst = parse_instance(BASE, source="base.yaml")
    assert inst.workload.classes[0].tpot_s == pytest.approx(0.05)


@pytest.mark.parametrize(
    "doc, field, words",
    [
        (_with("hardware.domains.0.chip", "h1000"), "hardware.domains[0].chip", "unknown chip 'h1000'"),
        (_with("model", "llama-9"), "model", "unknown model 'llama-9'"),
        (_with("workload.classes.0.rate_rps", -3), "workload.classes[0].rate_rps", "greater than 0"),
        (_with("workload.classes.0.tpot_ms", None, delete=True), "workload.classes[0].tpot_ms", "required"),
        (_with("workload.classes.0.tpot_s", 0.05), "workload.classes[0].tpot_s", "unknown field"),
        (_with("workload.classes.0.rate_rps", "10 req/s"), "workload.classes[0].rate_rps", "valid number"),
        (_with("hardwar", {}), "hardwar", "unknown field"),
        (_with("hardware.domains.0.switch", "nowhere"), "hardware.domains[0].switch", "not declared"),
        (_with("hardware.domains.0.chips_per_domain", 16), "hardware.domains[0].chips_per_domain",
         "exceeds the largest h100"),
        (_with("workload.classes.0.ttft_ms", float("nan")), "workload.classes[0].ttft_ms", "finite"),
    ],
)
def test_bad_instances_name_file_field_expectation(doc, field, words):
    with pytest.raises(InputError) as e:
        parse_instance(doc, source="bad.yaml")
    msg = str(e.value)
    assert msg.startswith("bad.yaml: "), msg
    assert field in msg, msg
    assert words in msg, msg


def test_yaml_syntax_error_names_line(tmp_path):
    p = tmp_path / "broken.yaml"
    p.write_text("name: x\nmodel: [unclosed\n")
    with pytest.raises(InputError) as e:
        load_instance(p)
    assert str(p) in str(e.value) and "line" in str(e.value)


def test_json_instances_are_accepted(tmp_path):
    import json

    p = tmp_path / "i.json"
    p.write_text(json.dumps(BASE))
    assert load_instance(p).name == "t"


def test_shipped_instances_validate():
    from pathlib import Path

    for f in sorted(Path("instances").glob("*.yaml")):
        inst = load_instance(f)
        assert inst.name == f.stem, f
        assert yaml.safe_load(f.read_text())["name"] == inst.name


@pytest.mark.parametrize(("path", "value"), [("hardware.switches", ["tor", []]),
                                             ("hardware.chips", [{"name": ["h100"], "base": "h100"}])])
def test_names_of_the_wrong_type_are_the_schemas_error_not_a_crash(path, value):
    """A switch or chip name that is a list (the long fuzz's invalid family found one) is reported by the
    schema, naming the field; the catalogue's extra checks read only names that are strings."""
    with pytest.raises(InputError, match=path.split(".")[1]):
        parse_instance(_with(path, value))
