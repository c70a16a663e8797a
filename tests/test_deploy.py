"""``placement deploy``: every document it writes passes the schema written from its published definition;
replicas, layouts and domains are the plan's; chips no engine runs get vendor-neutral records, said plainly."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from functools import cache
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from placement.cli.app import app
from placement.core.instance.loading import load_instance
from placement.core.plans.plan import Plan
from placement.deploy import build
from placement.deploy.engines import EngineLayout, sglang_args, trtllm_options, vllm_args

runner = CliRunner()
ROOT = Path(__file__).parents[1]
#: Small shipped instances covering P/D on H100 + Bertha, speculative decoding on H200, Trainium + CS-3.
SMALL = ("bertha-lpddr", "spec-decode-draft", "trainium-cerebras")
SCHEMA_OF_KIND = {"Deployment": "k8s-deployment", "LeaderWorkerSet": "leaderworkerset", "ConfigMap": "configmap",
                  "DynamoGraphDeployment": "dynamo-graph-deployment", "PlacementPool": "vendor-neutral",
                  "Service": "service", "HTTPRoute": "httproute", "InferencePool": "inferencepool"}
#: The published schemas (``schemas/deploy/real/``, SOURCES.md: Kubernetes 1.31 OpenAPI, the LWS, Dynamo and
#: Gateway API CRDs, converted strictly: an unknown field is an error) and this project's own.
SCHEMA_FILES = {"k8s-deployment": "real/deployment-apps-v1.json", "service": "real/service-v1.json",
                "configmap": "real/configmap-v1.json", "leaderworkerset": "real/leaderworkerset-v1.json",
                "dynamo-graph-deployment": "real/dynamographdeployment-v1alpha1.json",
                "httproute": "real/httproute-v1.json", "inferencepool": "real/inferencepool-v1.json",
                "vendor-neutral": "vendor-neutral.schema.json",
                "llm-d-modelservice-values": "llm-d-modelservice-values.schema.json"}


@cache
def schema(name: str) -> jsonschema.protocols.Validator:
    doc = json.loads((ROOT / "schemas/deploy" / SCHEMA_FILES[name]).read_text())
    validator = jsonschema.validators.validator_for(doc)
    validator.check_schema(doc)
    assert doc["x-source"]  # every vendored schema cites what it was written from
    return validator(doc)


def test_the_published_schemas_are_their_sources_converted():
    block = (ROOT / "schemas/deploy/real/SOURCES.md").read_text().split("```sh\n")[1].split("```")[0]
    commands = block.replace(" --out $R", " --check --out $R")
    assert commands.count("--check") == 6   # the Service and ConfigMap share one loop
    done = subprocess.run(["bash", "-ec", commands.replace(".venv/bin/python", sys.executable)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


@cache
def solved(name: str) -> Plan:
    from placement.core.pipeline.solve import solve

    plan = solve(load_instance(ROOT / f"instances/{name}.yaml"))  # the default backend (CBC): HiGHS is slow on spec-decode
    assert plan.status == "optimal"
    return plan


def documents(files: dict[str, str]) -> list[tuple[str, dict]]:
    """(schema name, document) of every YAML document written."""
    out = []
    for rel, text in files.items():
        if rel.startswith("llm-d/"):
            out.append(("llm-d-modelservice-values", yaml.safe_load(text)))
        elif rel.endswith(".yaml"):
            out += [(SCHEMA_OF_KIND[d["kind"]], d) for d in yaml.safe_load_all(text)]
    return out


def check_all(files: dict[str, str]) -> list[tuple[str, dict]]:
    docs = documents(files)
    assert docs
    for name, doc in docs:
        errors = list(schema(name).iter_errors(doc))
        assert not errors, (name, [f"{list(e.path)}: {e.message}" for e in errors])
    return docs


#: Every shipped instance in every format with every engine it takes.
SHIPPED = sorted(p.stem for p in (ROOT / "instances").glob("*.yaml"))
CASES = [(n, f, e) for n in SHIPPED for f in ("k8s", "dynamo") for e in ("vllm", "sglang", "trtllm")]
CASES += [(n, "llm-d", "vllm") for n in SHIPPED]


@pytest.mark.parametrize(("name", "fmt", "engine"), CASES)
def test_every_document_passes_its_schema(name, fmt, engine):
    inst = load_instance(ROOT / f"instances/{name}.yaml")
    check_all(build(solved(name), fmt=fmt, engine=engine, instance=inst))


def _replicas_by_pool(docs: list[tuple[str, dict]]) -> dict[str, int]:
    count: dict[str, int] = defaultdict(int)
    for name, d in docs:
        if name in ("k8s-deployment", "leaderworkerset", "vendor-neutral") and "placement.io/pool" in d["metadata"]["labels"]:
            count[d["metadata"]["labels"]["placement.io/pool"]] += d["spec"]["replicas"]
        elif name == "dynamo-graph-deployment":
            for svc in d["spec"]["services"].values():
                if "labels" in svc:
                    count[svc["labels"]["placement.io/pool"]] += svc["replicas"]
    return count


@pytest.mark.parametrize("fmt", ["k8s", "dynamo"])
def test_replicas_and_domains_are_the_plans(fmt):
    plan = solved("bertha-lpddr")
    docs = check_all(build(plan, fmt=fmt, engine="vllm", instance=load_instance(ROOT / "instances/bertha-lpddr.yaml")))
    assert _replicas_by_pool(docs) == {p.id: p.replicas for p in plan.pools}
    want = {p.id: sorted(f"{s.site}-{i}" for s in p.sites for i in s.domains) for p in plan.pools}
    text = json.dumps([d for _, d in docs])
    for pool_id, domains in want.items():
        for value in domains:
            assert f'"{value}"' in text, (pool_id, value)


def test_bertha_pools_are_vendor_neutral_and_said_so():
    plan = solved("bertha-lpddr")
    files = build(plan, fmt="k8s", engine="vllm", instance=load_instance(ROOT / "instances/bertha-lpddr.yaml"))
    neutral = [d for n, d in documents(files) if n == "vendor-neutral"]
    assert {d["spec"]["chip"] for d in neutral} == {"bertha"}
    assert sum(d["spec"]["replicas"] for d in neutral) == sum(p.replicas for p in plan.pools if p.chip == "bertha")
    assert all("no engine" in d["spec"]["reason"] for d in neutral)
    assert "placement.io/chip: bertha" not in files["k8s.yaml"] and "- bertha\n" not in files["k8s.yaml"]
    assert "NOT deployed" in files["README.md"] and "targets bertha" in files["README.md"]


def test_layout_flags_per_engine():
    a = EngineLayout(tp=8, pp=2, dp=4, ep=32, batch=256, chunk_tokens=2048, kv="fp8", role="prefill",
                     draft_model="org/draft", draft_tokens=3)
    v = vllm_args(a, "org/m")
    assert v[v.index("--tensor-parallel-size") + 1] == "8" and v[v.index("--data-parallel-size") + 1] == "4"
    assert "--enable-expert-parallel" in v and v[v.index("--max-num-batched-tokens") + 1] == "2048"
    assert json.loads(v[v.index("--speculative-config") + 1]) == {"model": "org/draft", "num_speculative_tokens": 3}
    s = sglang_args(a, "org/m")
    assert s[s.index("--tp-size") + 1] == "32" and s[s.index("--dp-size") + 1] == "4" and "--enable-dp-attention" in s
    assert s[s.index("--ep-size") + 1] == "32" and s[s.index("--disaggregation-mode") + 1] == "prefill"
    assert s[s.index("--kv-cache-dtype") + 1] == "fp8_e4m3"
    t = trtllm_options(a)
    assert t["enable_attention_dp"] is True and t["kv_cache_config"] == {"dtype": "fp8"}
    assert t["speculative_config"]["max_draft_len"] == 3


def test_speculative_pools_carry_the_draft():
    plan = solved("spec-decode-draft")
    files = build(plan, fmt="k8s", engine="vllm", instance=load_instance(ROOT / "instances/spec-decode-draft.yaml"))
    spec_pools = {p.id for p in plan.pools if p.config.kind == "decode-spec" and p.stage == "decode"}
    assert spec_pools
    for _, d in documents(files):
        if d["kind"] != "Deployment":
            continue
        args = d["spec"]["template"]["spec"]["containers"][0]["args"]
        has = "--speculative-config" in args
        assert has == (d["metadata"]["labels"]["placement.io/pool"] in spec_pools)
        if has:
            assert "meta-llama/Llama-3.2-1B-Instruct" in args[args.index("--speculative-config") + 1]


def test_replicas_wider_than_a_node_become_leader_worker_sets():
    plan = solved("bertha-lpddr")
    files = build(plan, fmt="k8s", engine="sglang", chips_per_node={"h100": 1},
                  instance=load_instance(ROOT / "instances/bertha-lpddr.yaml"))
    docs = check_all(files)
    lws = [d for n, d in docs if n == "leaderworkerset"]
    wide = [p for p in plan.pools if p.chip == "h100" and p.chips_per_replica > 1]
    assert len(lws) == len(wide) > 0
    for d in lws:
        pool = next(p for p in wide if p.id == d["metadata"]["labels"]["placement.io/pool"])
        assert d["spec"]["leaderWorkerTemplate"]["size"] == pool.chips_per_replica
        args = d["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["args"]
        assert "$(LWS_WORKER_INDEX)" in args


def test_bench_script_drives_each_class_at_its_rate():
    plan = solved("trainium-cerebras")
    inst = load_instance(ROOT / "instances/trainium-cerebras.yaml")
    script = build(plan, fmt="k8s", engine="vllm", instance=inst)["bench.sh"]
    assert subprocess.run(["bash", "-n"], input=script, text=True, check=False).returncode == 0
    for c in inst.workload.classes:
        line = next(ln for ln in script.splitlines() if ln.startswith("aiperf") and ln.endswith(f'"$OUT"/{c.name}'))
        assert f"--request-rate {c.rate_rps:g} " in line
        assert f"--output-tokens-mean {c.output_tokens} " in line
    assert script.count("\ncheck ") == len(inst.workload.classes)


def test_cli_writes_the_folder_and_refuses_bad_combinations(tmp_path):
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(solved("bertha-lpddr").model_dump_json())
    out = tmp_path / "deploy"
    r = runner.invoke(app, ["deploy", str(plan_path), "--format", "dynamo", "--engine", "trtllm", "--out", str(out),
                            "--instance", "instances/bertha-lpddr.yaml"])
    assert r.exit_code == 0, r.output
    assert {p.name for p in out.iterdir()} == {"dynamo.yaml", "vendor-neutral.yaml", "bench.sh", "README.md"}
    assert "no engine targets" in r.output
    r = runner.invoke(app, ["deploy", str(plan_path), "--format", "llm-d", "--engine", "sglang", "--out", str(out)])
    assert r.exit_code == 2 and "vLLM" in r.output
    r = runner.invoke(app, ["deploy", str(plan_path), "--format", "k8s", "--out", str(out),
                            "--instance", "instances/trainium-cerebras.yaml"])
    assert r.exit_code == 2 and "not 'trainium-cerebras'" in r.output
    edited = yaml.safe_load((ROOT / "instances/bertha-lpddr.yaml").read_text())
    edited["workload"]["classes"][0]["rate_rps"] *= 2
    other = tmp_path / "bertha-lpddr.yaml"
    other.write_text(yaml.safe_dump(edited))
    r = runner.invoke(app, ["deploy", str(plan_path), "--format", "k8s", "--out", str(out), "--instance", str(other)])
    assert r.exit_code == 2 and "another version" in r.output
