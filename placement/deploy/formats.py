"""The documents of each deployment format: Dynamo graphs, llm-d Helm values, vendor-neutral pools.

* **Dynamo** — ``DynamoGraphDeployment`` (``nvidia.com/v1alpha1``; fields as in
  ai-dynamo/dynamo ``docs/kubernetes/api_reference.md``): a ``Frontend``
  service and one worker service per unit, ``subComponentType`` prefill or
  decode, ``replicas``, ``resources.limits.gpu``, ``multinode.nodeCount``
  for replicas spanning nodes, the pod's affinity and the worker command in
  ``extraPodSpec``. At most 25 services per graph (the CRD's bound): larger
  plans get several graphs.
* **llm-d** — values for the ``llm-d-modelservice`` Helm chart
  (llm-d-incubation/llm-d-modelservice ``charts/llm-d-modelservice/values.yaml``),
  one release per unit: its role's ``replicas``, ``parallelism`` (tensor,
  data, dataLocal, workers), ``nodeSelector`` (chip, domain group) and
  ``acceleratorTypes`` (the domains), the vLLM arguments. The chart runs
  vLLM, so llm-d takes ``--engine vllm``. Releases of one class share the
  ``llm-d.ai/model`` label so one InferencePool routes across them.
* **vendor-neutral** — ``placement.io/v1alpha1`` ``PlacementPool`` records for
  units no engine runs (``schemas/deploy/vendor-neutral.schema.json``): what
  the plan decided, for the vendor's own stack to realise.
"""

from __future__ import annotations

from placement.core.plans.plan import step_records
from placement.deploy.engines import EngineLayout, trtllm_options, vllm_args
from placement.deploy.k8s import HF_TOKEN_SECRET, SHM_SIZE, node_affinity, pod_labels
from placement.deploy.names import dns_name, label_value, require_unique
from placement.deploy.units import LABEL_DOMAIN, Unit, replica_bounds

__all__ = ["DYNAMO_IMAGE", "DYNAMO_VERSION", "LLMD_IMAGE", "MAX_DYNAMO_SERVICES", "dynamo_graphs", "dynamo_worker_command",
           "llmd_model_label", "llmd_values",
           "neutral_pool"]

#: Dynamo runtime images per engine, at the release whose DynamoGraphDeployment CRD the documents are
#: validated against (0.8.0, ``schemas/deploy/real/SOURCES.md``; override with ``deploy --image``).
DYNAMO_VERSION = "0.8.0"
DYNAMO_IMAGE = {"vllm": f"nvcr.io/nvidia/ai-dynamo/vllm-runtime:{DYNAMO_VERSION}",
                "sglang": f"nvcr.io/nvidia/ai-dynamo/sglang-runtime:{DYNAMO_VERSION}",
                "trtllm": f"nvcr.io/nvidia/ai-dynamo/tensorrtllm-runtime:{DYNAMO_VERSION}"}
#: The llm-d engine image (CUDA build) of the llm-d release the chart values are written for.
LLMD_IMAGE = "ghcr.io/llm-d/llm-d-cuda:v0.9.0"
#: ``spec.services`` holds at most 25 entries (``MaxProperties: 25``).
MAX_DYNAMO_SERVICES = 25
_ACCELERATOR_TYPE = {"NVIDIA": "nvidia", "AMD": "amd", "AWS": "nvidia"}


def _engine_flags(a: EngineLayout, model: str) -> list[str]:
    """vLLM's flags without the ``vllm serve MODEL`` head, the HTTP binding (the chart's or Dynamo's) and the
    NIXL connector (Dynamo and the chart set their own)."""
    return _drop_values(vllm_args(a, model)[3:], ("--host", "--port", "--kv-transfer-config"))


def dynamo_worker_command(engine: str, a: EngineLayout, model: str, options_path: str) -> list[str]:
    """The command of a Dynamo worker (``python3 -m dynamo.<engine>``) for a unit's layout."""
    if engine == "vllm":
        cmd = ["python3", "-m", "dynamo.vllm", "--model", model, *_engine_flags(a, model)]
        return cmd + (["--is-prefill-worker"] if a.role == "prefill" else [])
    if engine == "sglang":
        from placement.deploy.engines import sglang_args

        return ["python3", "-m", "dynamo.sglang", *_drop_values(sglang_args(a, model)[3:], ("--host", "--port"))]
    cmd = ["python3", "-m", "dynamo.trtllm", "--model-path", model, "--extra-engine-args", options_path]
    return cmd + ([] if a.role == "aggregated" else ["--disaggregation-mode", a.role])


def trtllm_dynamo_options(a: EngineLayout) -> dict:
    """TRT-LLM engine options for a Dynamo worker: the layout too (no flags carry it there)."""
    opts = {"tensor_parallel_size": a.tp * a.dp, "pipeline_parallel_size": a.pp,
            "moe_expert_parallel_size": a.ep, "max_batch_size": a.batch, **trtllm_options(a)}
    if a.chunk_tokens:
        opts["max_num_tokens"] = a.chunk_tokens
    return opts


def _dynamo_service(unit: Unit, plan_name: str, engine: str, model: str, image: str | None,
                    options_path: str) -> dict:
    assert unit.layout is not None
    cmd = dynamo_worker_command(engine, unit.layout, model, options_path)
    service: dict = {
        "componentType": "worker", "replicas": unit.replicas,
        "labels": {**{k: v for k, v in pod_labels(unit, plan_name).items() if k.startswith("placement.io/")},
                   "placement.io/unit": unit.name},
        "resources": {"limits": {"gpu": str(unit.pod_chips)}, "requests": {"gpu": str(unit.pod_chips)}},
        "envFromSecret": HF_TOKEN_SECRET, "sharedMemory": {"size": SHM_SIZE},
        "autoscaling": dict(zip(("minReplicas", "maxReplicas"), replica_bounds(unit), strict=True), enabled=False),
        "extraPodSpec": {"affinity": node_affinity(unit),
                         "mainContainer": {"image": image or DYNAMO_IMAGE[engine], "command": cmd[:1],
                                           "args": cmd[1:]}}}
    if unit.role in ("prefill", "decode"):
        service["subComponentType"] = unit.role
    if unit.nodes > 1:
        service["multinode"] = {"nodeCount": unit.nodes}
    return service


def dynamo_graphs(units: list[Unit], plan_name: str, engine: str, model: str, image: str | None,
                  options_path: str) -> list[dict]:
    """``DynamoGraphDeployment`` documents: a frontend and one worker service per unit, 25 services at most each."""
    per_graph = MAX_DYNAMO_SERVICES - 1
    graphs = []
    for start in range(0, len(units), per_graph):
        part = units[start:start + per_graph]
        services: dict = {"Frontend": {"componentType": "frontend", "replicas": 1,
                                       "extraPodSpec": {"mainContainer": {
                                           "image": image or DYNAMO_IMAGE[engine],
                                           "command": ["python3"], "args": ["-m", "dynamo.frontend"]}}}}
        require_unique(((_service_name(u), f"pool {u.pool.id} ({u.role}) in {u.site}") for u in part),
                       "Dynamo service name", "pools")
        for u in part:
            services[_service_name(u)] = _dynamo_service(u, plan_name, engine, model, image, options_path)
        name = dns_name(plan_name, str(start // per_graph)) if len(units) > per_graph else dns_name(plan_name)
        graphs.append({"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
                       "metadata": {"name": name, "labels": {"placement.io/plan": label_value(plan_name)}},
                       "spec": {"backendFramework": engine, "services": services}})
    return graphs


def _service_name(unit: Unit) -> str:
    return "".join(p.capitalize() for p in dns_name(unit.pool.id, unit.role, unit.site).split("-"))


def llmd_values(unit: Unit, model: str, image: str | None) -> dict:
    """Values for one ``llm-d-modelservice`` release serving a unit (the other role not created)."""
    assert unit.layout is not None
    a = unit.layout
    role = "prefill" if unit.role == "prefill" else "decode"
    other = "decode" if role == "prefill" else "prefill"
    args = _drop_values(_engine_flags(a, model), ("--tensor-parallel-size", "--data-parallel-size"))
    resource = {"NVIDIA": "nvidia.com/gpu", "AMD": "amd.com/gpu"}.get(unit.vendor, "nvidia.com/gpu")
    return {
        "modelArtifacts": {"name": model, "uri": f"hf://{model}",
                           "labels": {"llm-d.ai/inferenceServing": "true",
                                      "llm-d.ai/model": llmd_model_label(model, unit.pool.traffic_class)}},
        "multinode": unit.nodes > 1,
        "accelerator": {"type": _ACCELERATOR_TYPE.get(unit.vendor, "nvidia")},
        "routing": {"servicePort": 8000, "proxy": {"enabled": unit.role != "aggregated", "connector": "nixlv2"}},
        role: {"create": True, "replicas": unit.replicas, "nodeSelector": unit.node_selector,
               "parallelism": {"tensor": a.tp, "data": a.dp, "dataLocal": max(1, a.dp // unit.nodes),
                               "workers": unit.nodes},
               "acceleratorTypes": {"labelKey": LABEL_DOMAIN, "labelValues": unit.domain_values},
               "containers": [{"name": "vllm", "image": image or LLMD_IMAGE,
                               "modelCommand": "vllmServe", "args": args,
                               "resources": {"limits": {resource: unit.pod_chips},
                                             "requests": {resource: unit.pod_chips}}}]},
        other: {"create": False, "replicas": 0},
    }


def llmd_model_label(model: str, cls: str) -> str:
    """The ``llm-d.ai/model`` label the releases of one class share (their InferencePool selects on it)."""
    return dns_name(model, cls)


def _drop_values(flags: list[str], names: tuple[str, ...]) -> list[str]:
    """``flags`` without the named options and their values (the chart sets them from ``parallelism``)."""
    out: list[str] = []
    skip = False
    for f in flags:
        if skip:
            skip = False
            continue
        if f in names:
            skip = True
            continue
        out.append(f)
    return out


def neutral_pool(unit: Unit, plan_name: str) -> dict:
    """A ``PlacementPool`` record: the plan's decision for a unit no listed engine runs."""
    p = unit.pool
    return {"apiVersion": "placement.io/v1alpha1", "kind": "PlacementPool",
            "metadata": {"name": unit.name, "labels": pod_labels(unit, plan_name)},
            "spec": {"reason": unit.neutral_reason, "chip": p.chip, "vendor": unit.vendor, "stage": p.stage,
                     "trafficClass": p.traffic_class, "replicas": unit.replicas,
                     "chipsPerReplica": p.chips_per_replica,
                     "layout": {"tp": p.tp, "pp": p.pp, "ep": p.ep, "dp": p.config.main.dp},
                     "batch": p.batch, "chunkTokens": p.chunk_tokens, "domainGroup": unit.site,
                     "domains": unit.domain_values,
                     "predicted": {"ttftMs": p.ttft_ms, "tpotMs": p.tpot_ms,
                                   "capacityRpsPerReplica": step_records(p.capacity_rps_per_replica)},
                     "nodeSelector": unit.node_selector}}
