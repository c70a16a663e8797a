"""Traffic as planned (``--format k8s``): per class, a Gateway API route splitting its requests by the plan's rates.

A class is reached at ``/<class>/v1/…`` on the Gateway :data:`GATEWAY` (the cluster's, not written
here); the prefix is rewritten to ``/`` and the request goes to one of the class's entry backends with
the weight of the rate the plan sends it:

* an **aggregated** unit: its own Service, weight = the unit's planned requests/s;
* the class's **prefill → decode** pairs: per prefill unit, a router that sends each request to it, then
  its KV and decoding to the decode units the plan's ``prefill_to_decode`` says it feeds — SGLang's PD
  router (``sglang_router.launch_router --pd-disaggregation``) or TensorRT-LLM's disaggregated server
  (``trtllm-serve disaggregated``) — weight = the rate those feeds carry (the router balances its
  decode units itself).
  vLLM ships no such router: those classes' PD share is left out of the route and said so (``--format
  llm-d``'s routing sidecar or ``--format dynamo``'s frontend route them).

Weights are the rates in milli-requests/s (HTTPRoute weights are integers ≤ 1,000,000; a positive
rate keeps weight ≥ 1). Engines serve the class under its name (``--served-model-name``), so a
request's ``model`` is the class name.

``--format llm-d``: per class an ``InferencePool`` (``inference.networking.k8s.io/v1``, Gateway API
Inference Extension) selecting the pods of the class's releases (their shared ``llm-d.ai/model``
label) with the endpoint picker :func:`epp_name` (the one llm-d's charts install), and an HTTPRoute
from ``/<class>/`` to it: the picker, not a weight, spreads requests over the class's pods.

Autoscaling hints (:func:`placement.deploy.units.replica_bounds`): the fewest and most replicas a
unit's planned load needs across its pool's capacity band — written as annotations
(``placement.io/min-replicas``, ``placement.io/max-replicas``) and as the Dynamo services'
``autoscaling`` bounds (left disabled: the metric to scale on is the operator's choice).
"""

from __future__ import annotations

import yaml

from placement.core.plans.plan import Plan
from placement.deploy.engines import PORT
from placement.deploy.k8s import SGLANG_BOOTSTRAP_PORT, cluster_service
from placement.deploy.names import dns_name, label_value
from placement.deploy.units import Unit, unit_rate_rps

__all__ = ["EPP_PORT", "GATEWAY", "class_routes", "epp_name", "inference_pools"]

#: The endpoint picker's gRPC (ext-proc) port, the Inference Extension's default.
EPP_PORT = 9002

#: The Gateway (gateway.networking.k8s.io/v1) the routes attach to: the cluster's, named so.
GATEWAY = "inference-gateway"
_MAX_WEIGHT = 1_000_000


def epp_name(plan: Plan, cls: str) -> str:
    """The endpoint picker Service of a class's InferencePool (installed with llm-d's charts under this name)."""
    return dns_name(plan.instance, cls, "epp")


def inference_pools(units: list[Unit], plan: Plan, model_label) -> list[dict]:
    """Per class with engine-run units: its InferencePool over the pods labelled ``model_label(class)`` and an
    HTTPRoute from ``/<class>/`` to it."""
    docs: list[dict] = []
    for cp in plan.classes:
        if not any(u.pool.traffic_class == cp.name for u in units):
            continue
        name = dns_name(plan.instance, cp.name)
        docs.append({"apiVersion": "inference.networking.k8s.io/v1", "kind": "InferencePool",
                     "metadata": {"name": name, "labels": _labels(plan, cp.name)},
                     "spec": {"selector": {"matchLabels": {"llm-d.ai/model": model_label(cp.name)}},
                              "targetPorts": [{"number": PORT}],
                              "endpointPickerRef": {"name": epp_name(plan, cp.name), "port": {"number": EPP_PORT}}}})
        docs.append(_route(plan, cp.name, [{"group": "inference.networking.k8s.io", "kind": "InferencePool",
                                            "name": name}]))
    return docs


def _route(plan: Plan, cls: str, refs: list[dict]) -> dict:
    """The HTTPRoute of a class: ``/<cls>/`` on the Gateway, the prefix rewritten to ``/``, to ``refs``."""
    return {
        "apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute",
        "metadata": {"name": dns_name(plan.instance, cls), "labels": _labels(plan, cls)},
        "spec": {"parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": GATEWAY}],
                 "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": f"/{cls}/"}}],
                            "filters": [{"type": "URLRewrite", "urlRewrite": {
                                "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}],
                            "backendRefs": refs}]}}


def _weight(rate_rps: float) -> int:
    return min(_MAX_WEIGHT, max(1, round(rate_rps * 1000))) if rate_rps > 0 else 0


def _labels(plan: Plan, cls: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "placement", "placement.io/plan": label_value(plan.instance),
            "placement.io/class": label_value(cls)}


def _sglang_router(name: str, plan: Plan, cls: str, prefill: list[Unit], decode: list[Unit], image: str) -> dict:
    args = ["-m", "sglang_router.launch_router", "--pd-disaggregation", "--host", "0.0.0.0", "--port", str(PORT)]
    for u in prefill:
        args += ["--prefill", f"http://{u.name}:{PORT}", str(SGLANG_BOOTSTRAP_PORT)]
    for u in decode:
        args += ["--decode", f"http://{u.name}:{PORT}"]
    return _router_deployment(name, plan, cls, image, ["python3"], args, None)


def _trtllm_router(name: str, plan: Plan, cls: str, prefill: list[Unit], decode: list[Unit],
                   image: str) -> list[dict]:
    config = {"hostname": "0.0.0.0", "port": PORT,
              "context_servers": {"num_instances": len(prefill), "urls": [f"{u.name}:{PORT}" for u in prefill]},
              "generation_servers": {"num_instances": len(decode), "urls": [f"{u.name}:{PORT}" for u in decode]}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": dns_name(name, "config"),
                                                                 "labels": _labels(plan, cls)},
          "data": {"disagg.yaml": yaml.safe_dump(config, sort_keys=False)}}
    # The workers must answer before the proxy gives up on them: as long as their startup probes allow.
    args = ["disaggregated", "-c", "/etc/placement/disagg.yaml", "--server_start_timeout", "3600"]
    return [cm, _router_deployment(name, plan, cls, image, ["trtllm-serve"], args, cm["metadata"]["name"])]


def _router_deployment(name: str, plan: Plan, cls: str, image: str, command: list[str], args: list[str],
                       config_map: str | None) -> dict:
    labels = {**_labels(plan, cls), "app.kubernetes.io/instance": name, "placement.io/role": "router"}
    container: dict = {"name": "router", "image": image, "command": command, "args": args,
                       "ports": [{"containerPort": PORT, "name": "http"}],
                       "readinessProbe": {"httpGet": {"path": "/health", "port": "http"}, "periodSeconds": 10}}
    spec: dict = {"containers": [container]}
    if config_map:
        container["volumeMounts"] = [{"name": "router-config", "mountPath": "/etc/placement"}]
        spec["volumes"] = [{"name": "router-config", "configMap": {"name": config_map}}]
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app.kubernetes.io/instance": name}},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def _router_service(name: str, plan: Plan, cls: str) -> dict:
    return cluster_service(name, _labels(plan, cls), {"app.kubernetes.io/instance": name})


def _pd_pairs(plan: Plan, cls: str, mine: list[Unit]) -> list[tuple[str, list[Unit], list[Unit], float, float]]:
    """(router name, prefill units, decode units, req/s it routes, req/s lost) per prefill unit of a class: the
    decode units the plan's ``prefill_to_decode`` says it feeds (all the class's, when the plan states no feeds),
    the lost rate that which goes to decode units not in ``mine`` (vendor-neutral ones)."""
    decode = {(u.pool.id, u.site): u for u in mine if u.role == "decode"}
    feeds = [f for f in plan.prefill_to_decode if f.traffic_class == cls]
    out = []
    for u in (u for u in mine if u.role == "prefill"):
        if not feeds:
            targets, rate, lost = list(decode.values()), unit_rate_rps(u), 0.0
        else:
            mine_feeds = [f for f in feeds if (f.prefill_pool, f.prefill_site) == (u.pool.id, u.site)]
            keys = list(dict.fromkeys((f.decode_pool, f.decode_site) for f in mine_feeds if f.rate_rps > 0))
            targets = [decode[k] for k in keys if k in decode]
            rate = sum(f.rate_rps for f in mine_feeds if (f.decode_pool, f.decode_site) in decode)
            lost = sum(f.rate_rps for f in mine_feeds if (f.decode_pool, f.decode_site) not in decode)
        if targets:
            out.append((dns_name(u.name, "router"), [u], targets, rate, lost))
    return out


def class_routes(units: list[Unit], plan: Plan, engine: str, image: str) -> tuple[list[dict], list[str]]:
    """(documents, notes): per class an HTTPRoute over its aggregated units and its PD router, the router's
    Deployment and Service (and TRT-LLM's config), in class order; notes say what is not routed. The
    routers run the engine's own ``image`` (SGLang's ships ``sglang_router``, TRT-LLM's ``trtllm-serve``)."""
    docs: list[dict] = []
    notes: list[str] = []
    for cp in plan.classes:
        mine = [u for u in units if u.pool.traffic_class == cp.name]
        backends = [(u.name, unit_rate_rps(u)) for u in mine if u.role == "aggregated"]
        for name, prefill, decode, rate, lost in _pd_pairs(plan, cp.name, mine):
            if lost > 0:
                notes.append(f"class {cp.name}: {lost:.4g} req/s the plan hands from {prefill[0].name} to decode "
                             "pools no engine here runs are not in its route")
            if engine == "sglang":
                docs += [_sglang_router(name, plan, cp.name, prefill, decode, image),
                         _router_service(name, plan, cp.name)]
                backends.append((name, rate))
            elif engine == "trtllm":
                docs += [*_trtllm_router(name, plan, cp.name, prefill, decode, image),
                         _router_service(name, plan, cp.name)]
                backends.append((name, rate))
            else:
                notes.append(f"class {cp.name}: {rate:.4g} req/s planned through {prefill[0].name} are not in its "
                             "route: vLLM ships no PD router (use --format llm-d or --format dynamo)")
        refs = [{"name": n, "port": PORT, "weight": _weight(r)} for n, r in backends if _weight(r) > 0]
        if refs:
            docs.append(_route(plan, cp.name, refs))
    return docs, notes
