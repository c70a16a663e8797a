"""Deployments that serve the plan: every command line is one its engine's own parser accepts (the vendored
flag lists), pods bind and answer where their Services and probes look, batch caps mean what the engine
means, each class's traffic is routed by the plan's rates, and the checkpoint has the plan's precision."""

from __future__ import annotations

import math
import shlex
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from costmodels.models import load_model_catalog
from placement.cli.app import app
from placement.core.instance.loading import load_instance
from placement.deploy import build
from placement.deploy.checkpoints import checkpoints
from placement.deploy.engines import (
    ENGINE_SPECS,
    PORT,
    EngineLayout,
    sglang_args,
    trtllm_args,
    vendored_list,
    vllm_args,
)
from placement.deploy.units import replica_bounds, unit_rate_rps, units_of
from topology.chips import WEIGHT_PRECISIONS

ROOT = Path(__file__).parents[1]
FLAGS = ROOT / "placement/deploy/flags"
#: Flags Dynamo's own worker launchers add to the engine's (not in the engine's parser).
DYNAMO_OWN = {"--is-prefill-worker"}


def _flags_of(argv: list[str]) -> list[str]:
    return [a.split("=", 1)[0] for a in argv if a.startswith("-")]


def _engine_of(argv: list[str]) -> tuple[str, list[str]] | None:
    """(engine, the arguments its parser reads) of a container command, or None for one no vendored parser reads."""
    if argv[:2] == ["sh", "-c"]:  # a vLLM multi-node leader: ray start --head … && vllm serve …; a worker: ray only
        if "&&" not in argv[2]:
            return None
        argv = shlex.split(argv[2].split("&&", 1)[1])
    if argv[:1] == ["trtllm-llmapi-launch"]:
        argv = argv[1:]
    if argv[:2] == ["vllm", "serve"]:
        return "vllm", argv[3:]
    if argv[:3] == ["python3", "-m", "sglang.launch_server"]:
        return "sglang", argv[3:]
    if argv[:1] == ["trtllm-serve"] and argv[1:2] != ["disaggregated"]:
        return "trtllm", argv[2:]
    if argv[:3] in (["python3", "-m", "dynamo.vllm"], ["python3", "-m", "dynamo.sglang"]):
        return argv[2].split(".")[1], [a for a in argv[3:] if a not in DYNAMO_OWN]
    return None


def _containers(doc: dict) -> list[dict]:
    spec = doc.get("spec", {})
    if doc["kind"] == "Deployment":
        return spec["template"]["spec"]["containers"]
    if doc["kind"] == "LeaderWorkerSet":
        t = spec["leaderWorkerTemplate"]
        return t["leaderTemplate"]["spec"]["containers"] + t["workerTemplate"]["spec"]["containers"]
    if doc["kind"] == "DynamoGraphDeployment":
        return [s["extraPodSpec"]["mainContainer"] for s in spec["services"].values() if s["componentType"] == "worker"]
    return []


def _docs(files: dict[str, str]) -> list[dict]:
    return [d for rel, text in files.items() if rel.endswith(".yaml") and not rel.startswith("llm-d/")
            for d in yaml.safe_load_all(text)]


#: Every shipped instance.
SHIPPED = sorted(p.stem for p in (ROOT / "instances").glob("*.yaml"))


@pytest.fixture(scope="module")
def plans():
    from placement.core.pipeline.solve import solve

    out = {}
    for name in SHIPPED:
        inst = load_instance(ROOT / f"instances/{name}.yaml")
        out[name] = (inst, solve(inst, backend="highs"))
    return out


CASES = [(n, f, e) for n in SHIPPED for f in ("k8s", "dynamo") for e in ("vllm", "sglang", "trtllm")]
CASES += [(n, "llm-d", "vllm") for n in SHIPPED]


@pytest.mark.parametrize(("name", "fmt", "engine"), CASES)
def test_every_command_is_one_its_engine_parses(plans, name, fmt, engine):
    inst, plan = plans[name]
    files = build(plan, fmt=fmt, engine=engine, instance=inst)
    checked = 0
    for doc in _docs(files):
        for c in _containers(doc):
            found = _engine_of(c["command"] + c["args"])
            if found is None:
                continue
            which, argv = found
            unknown = set(_flags_of(argv)) - ENGINE_SPECS[which].flags()
            assert not unknown, (doc["metadata"]["name"], which, sorted(unknown))
            checked += 1
        if doc["kind"] == "ConfigMap" and "engine.yaml" in doc["data"]:
            keys = vendored_list("trtllm-llm-args.txt")
            opts = yaml.safe_load(doc["data"]["engine.yaml"])
            for k, v in opts.items():
                assert k in keys, k
                for sub in v if isinstance(v, dict) else ():
                    assert f"{k}.{sub}" in keys, f"{k}.{sub}"
    for rel, text in files.items():
        if rel.startswith("llm-d/"):
            argv = yaml.safe_load(text)
            for role in ("prefill", "decode"):
                for c in argv[role].get("containers", []):
                    assert not set(_flags_of(c["args"])) - ENGINE_SPECS["vllm"].flags()
                    checked += 1
    runnable = any(u.neutral_reason is None for u in units_of(plan, engine, kv=inst.precision.kv))
    assert checked or not runnable or fmt == "dynamo" and engine == "trtllm"


def test_a_misspelt_flag_is_caught():
    a = EngineLayout(tp=2, pp=1, dp=1, ep=1, batch=8, chunk_tokens=None, kv="bf16", role="aggregated")
    argv = vllm_args(a, "org/m")[3:] + ["--max-num-seq", "8"]
    assert set(_flags_of(argv)) - ENGINE_SPECS["vllm"].flags() == {"--max-num-seq"}


def test_batch_caps_mean_what_each_engine_means():
    # DeepSeek-V3 at dp8 with 271 sequences in the replica: vLLM and TRT-LLM cap each DP rank, SGLang the server.
    a = EngineLayout(tp=1, pp=1, dp=8, ep=8, batch=271, chunk_tokens=2048, kv="fp8", role="aggregated")
    v, s, t = vllm_args(a, "m"), sglang_args(a, "m"), trtllm_args(a, "m", "/x.yaml")
    assert v[v.index("--max-num-seqs") + 1] == "34"                   # ⌈271/8⌉ per rank: 272 in all, not 2,168
    assert s[s.index("--max-running-requests") + 1] == "271"          # SGLang gives each rank 271 // 8
    assert s[s.index("--chunked-prefill-size") + 1] == str(8 * 2048)  # split over the ranks the same way
    assert t[t.index("--max_batch_size") + 1] == "34"
    for argv in (v, s, t):
        assert argv[argv.index("--host") + 1] == "0.0.0.0" and argv[argv.index("--port") + 1] == str(PORT)
    wide = EngineLayout(tp=4, pp=1, dp=4, ep=16, batch=64, chunk_tokens=None, kv="fp8", role="decode", nodes=2)
    w = vllm_args(wide, "m")
    assert w[w.index("--data-parallel-backend") + 1] == "ray" and "--distributed-executor-backend" not in w


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_serving_pods_bind_their_port_answer_probes_and_read_the_token(plans, engine):
    inst, plan = plans["bertha-lpddr"]
    docs = _docs(build(plan, fmt="k8s", engine=engine, instance=inst))
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    workloads = [d for d in docs if d["kind"] in ("Deployment", "LeaderWorkerSet")
                 and d["metadata"]["labels"].get("placement.io/role") != "router"]
    assert workloads and set(services) >= {d["metadata"]["name"] for d in workloads}
    for d in workloads:
        svc = services[d["metadata"]["name"]]
        assert svc["spec"]["selector"]["app.kubernetes.io/instance"] == d["metadata"]["name"]
        (c,) = d["spec"]["template"]["spec"]["containers"]
        argv = c["command"] + c["args"]
        assert argv[argv.index("--port") + 1] == str(PORT) and {"containerPort": PORT, "name": "http"} in c["ports"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert c[probe]["httpGet"] == {"path": ENGINE_SPECS[engine].health_path, "port": "http"}
        assert c["env"][0]["valueFrom"]["secretKeyRef"]["name"] == "hf-token"
        assert {"name": "dshm", "mountPath": "/dev/shm"} in c["volumeMounts"]
        assert c["image"] == ENGINE_SPECS[engine].image and not c["image"].endswith(":latest")
        assert c["resources"]["limits"] == c["resources"]["requests"]
        pool = next(p for p in plan.pools if p.id == d["metadata"]["labels"]["placement.io/pool"])
        assert next(iter(c["resources"]["limits"].values())) == pool.chips_per_replica
        name = argv[argv.index("--served-model-name") + 1] if "--served-model-name" in argv else None
        assert name in (pool.traffic_class, None if engine == "trtllm" else pool.traffic_class)


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_each_class_is_routed_by_the_plans_rates(plans, engine):
    inst, plan = plans["bertha-lpddr"]
    docs = _docs(build(plan, fmt="k8s", engine=engine, instance=inst))
    services = {d["metadata"]["name"] for d in docs if d["kind"] == "Service"}
    routes = {d["metadata"]["labels"]["placement.io/class"]: d for d in docs if d["kind"] == "HTTPRoute"}
    units = [u for u in units_of(plan, engine, kv="fp8") if u.neutral_reason is None]
    for cp in plan.classes:
        mine = [u for u in units if u.pool.traffic_class == cp.name]
        agg = sum(unit_rate_rps(u) for u in mine if u.role == "aggregated")
        run = {(u.pool.id, u.site) for u in mine}
        pd = sum(f.rate_rps for f in plan.prefill_to_decode if f.traffic_class == cp.name
                 and (f.prefill_pool, f.prefill_site) in run and (f.decode_pool, f.decode_site) in run)
        routed = agg + (pd if engine != "vllm" else 0.0)   # KV handed to Bertha decode pools: not routable here
        if routed == 0:
            assert cp.name not in routes
            continue
        (rule,) = routes[cp.name]["spec"]["rules"]
        assert rule["matches"][0]["path"] == {"type": "PathPrefix", "value": f"/{cp.name}/"}
        refs = rule["backendRefs"]
        assert {r["name"] for r in refs} <= services
        assert sum(r["weight"] for r in refs) / 1000 == pytest.approx(routed, abs=1e-3 * len(refs))
    routers = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["labels"].get("placement.io/role") == "router"]
    assert bool(routers) == (engine != "vllm")  # bertha-lpddr's interactive class runs PD on H100


def test_the_checkpoint_has_the_plans_precision(plans):
    inst, plan = plans["spec-decode-draft"]   # Llama-3.1-70B with FP8 weights
    assert inst.precision.weights == "fp8"
    docs = _docs(build(plan, fmt="k8s", engine="vllm", instance=inst))
    models = {d["spec"]["template"]["spec"]["containers"][0]["args"][1] for d in docs if d["kind"] == "Deployment"
              and d["metadata"]["labels"].get("placement.io/role") != "router"}
    assert models == {"nvidia/Llama-3.1-70B-Instruct-FP8"}
    # no sourced checkpoint in the plan's precision: a warning that says what to give
    warned: list[str] = []
    other = plan.model_copy(update={"provenance": plan.provenance.model_copy(
        update={"precision_weights": "fp4", "model": "llama-3.2-1b", "draft_model": None})})
    files = build(other, fmt="k8s", engine="vllm", warn=warned.append)
    assert warned and "--checkpoint" in warned[0] and warned[0] in files["README.md"]


def test_deploy_warns_of_a_missing_checkpoint_and_takes_one(plans, tmp_path):
    _, plan = plans["trainium-cerebras"]   # Llama-3.1-70B in BF16: the base repository
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(plan.model_dump_json())
    runner = CliRunner()
    ok = runner.invoke(app, ["deploy", str(plan_path), "--format", "k8s", "--engine", "vllm", "--out",
                             str(tmp_path / "a"), "--checkpoint", "org/My-Model-BF16"])
    assert ok.exit_code == 0, ok.output
    assert "org/My-Model-BF16" in (tmp_path / "a/k8s.yaml").read_text()
    bad = runner.invoke(app, ["deploy", str(plan_path), "--format", "k8s", "--engine", "vllm", "--out",
                              str(tmp_path / "b"), "--checkpoint", "org/x; rm -rf /"])
    assert bad.exit_code == 2 and "--checkpoint" in bad.output and not (tmp_path / "b").exists()


def test_the_checkpoint_catalogue_is_sourced_and_known():
    models = load_model_catalog()
    doc = yaml.safe_load((ROOT / "placement/deploy/checkpoints.yaml").read_text())["checkpoints"]
    assert len(doc) == len(checkpoints())  # one entry per (model, precision)
    for e in doc:
        assert e["model"] in models and e["precision"] in WEIGHT_PRECISIONS and e["source"].strip()


def test_the_benchmark_addresses_each_class_as_it_is_served(plans):
    inst, plan = plans["bertha-lpddr"]
    for fmt, engine, url, model in (("k8s", "vllm", '"$ENDPOINT"/interactive', "interactive"),
                                    ("dynamo", "vllm", '"$ENDPOINT"', "interactive"),
                                    ("k8s", "trtllm", '"$ENDPOINT"/interactive', "nvidia/Llama-3.1-70B-Instruct-FP8")):
        script = build(plan, fmt=fmt, engine=engine, instance=inst)["bench.sh"]
        line = next(ln for ln in script.splitlines() if ln.startswith("aiperf") and "/interactive" in ln.split()[-1])
        argv = shlex.split(line.replace('"$ENDPOINT"', "ENDPOINT").replace('"$OUT"', "OUT"))
        assert argv[argv.index("--url") + 1] == url.replace('"$ENDPOINT"', "ENDPOINT")
        assert argv[argv.index("-m") + 1] == model
        assert argv[argv.index("--extra-inputs") + 1] == "ignore_eos:true"


def test_llmd_classes_reach_their_pods_through_an_inference_pool(plans):
    inst, plan = plans["bertha-lpddr"]
    files = build(plan, fmt="llm-d", engine="vllm", instance=inst)
    docs = list(yaml.safe_load_all(files["inference-pools.yaml"]))
    pools = {d["metadata"]["labels"]["placement.io/class"]: d for d in docs if d["kind"] == "InferencePool"}
    routes = {d["metadata"]["labels"]["placement.io/class"]: d for d in docs if d["kind"] == "HTTPRoute"}
    values = [yaml.safe_load(t) for rel, t in files.items() if rel.startswith("llm-d/")]
    for v in values:
        label = v["modelArtifacts"]["labels"]["llm-d.ai/model"]
        cls = next(c for c, d in pools.items() if d["spec"]["selector"]["matchLabels"]["llm-d.ai/model"] == label)
        (ref,) = routes[cls]["spec"]["rules"][0]["backendRefs"]
        assert ref == {"group": "inference.networking.k8s.io", "kind": "InferencePool",
                       "name": pools[cls]["metadata"]["name"]}
    assert set(pools) == {u.pool.traffic_class for u in units_of(plan, "vllm", kv="fp8") if u.neutral_reason is None}


def test_autoscaling_hints_bracket_the_plan_by_its_capacity_band(plans):
    inst, plan = plans["spec-decode-draft"]
    k8s = _docs(build(plan, fmt="k8s", engine="vllm", instance=inst))
    dyn = _docs(build(plan, fmt="dynamo", engine="vllm", instance=inst))
    units = {u.name: u for u in units_of(plan, "vllm", kv="fp8")}
    hinted = 0
    for d in k8s:
        if d["kind"] != "Deployment" or d["metadata"]["name"] not in units:
            continue
        u = units[d["metadata"]["name"]]
        fewest, most = (int(d["metadata"]["annotations"][f"placement.io/{k}-replicas"]) for k in ("min", "max"))
        assert fewest <= d["spec"]["replicas"] == u.replicas <= most
        band = u.pool.bands.capacity_rps_per_replica
        loads = {st: r for s in u.pool.sites if s.site == u.site for st, r in s.load_rps.items() if r > 0}
        need = [sum(r / band[st][i] for st, r in loads.items()) for i in range(len(u.pool.bands.levels))]
        assert most == max(u.replicas, math.ceil(max(need) - 1e-9)) and (fewest, most) == replica_bounds(u)
        assert fewest == min(u.replicas, max(1, math.ceil(min(need) - 1e-9)))
        hinted += most > fewest
    assert hinted  # the band is wide enough to matter somewhere
    services = [s for d in dyn for s in d["spec"]["services"].values() if s["componentType"] == "worker"]
    assert services and all(s["autoscaling"]["enabled"] is False
                            and s["autoscaling"]["minReplicas"] <= s["replicas"] <= s["autoscaling"]["maxReplicas"]
                            for s in services)
