"""Kubernetes objects for deployable units: pod templates with node affinity, Deployments, LeaderWorkerSets.

A unit whose replica fits on one node is an ``apps/v1`` Deployment; a replica
spanning several nodes is a LeaderWorkerSet (``leaderworkerset.x-k8s.io/v1``,
https://github.com/kubernetes-sigs/lws, API v1) whose group size is the nodes
per replica. Every pod requires nodes with the unit's chip, domain group and
one of the domains the plan chose (labels of :mod:`placement.deploy.units`).
When one replica fills exactly one scale-up domain, the LeaderWorkerSet also
asks for exclusive placement per domain (annotation
``leaderworkerset.sigs.k8s.io/exclusive-topology``).
"""

from __future__ import annotations

from placement.deploy.engines import ACCELERATOR_RESOURCE
from placement.deploy.names import ShellWord, label_value, shell_line
from placement.deploy.units import LABEL_CHIP, LABEL_DOMAIN, Unit

__all__ = ["ENGINE_IMAGE", "PORT", "deployment", "leader_worker_set", "node_affinity", "pod_labels", "pod_spec",
           "unit_objects"]

#: Default container images per engine (override with ``deploy --image``).
ENGINE_IMAGE = {"vllm": "vllm/vllm-openai:latest", "sglang": "lmsysorg/sglang:latest",
                "trtllm": "nvcr.io/nvidia/tensorrt-llm/release:latest"}
#: The OpenAI-compatible port every engine container listens on.
PORT = 8000
_EXCLUSIVE = "leaderworkerset.sigs.k8s.io/exclusive-topology"


def pod_labels(unit: Unit, plan_name: str) -> dict[str, str]:
    """Labels of a unit's pods (and the Deployment selector)."""
    return {"app.kubernetes.io/name": "placement", "app.kubernetes.io/instance": unit.name,
            "placement.io/plan": label_value(plan_name), "placement.io/pool": label_value(unit.pool.id),
            "placement.io/class": label_value(unit.pool.traffic_class), "placement.io/role": unit.role,
            LABEL_CHIP: unit.node_selector[LABEL_CHIP]}


def node_affinity(unit: Unit) -> dict:
    """Required node affinity: the unit's chip, domain group and the domains the plan chose."""
    terms = [{"key": key, "operator": "In", "values": [value]} for key, value in unit.node_selector.items()]
    if unit.domains:
        terms.append({"key": LABEL_DOMAIN, "operator": "In", "values": unit.domain_values})
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": terms}]}}}


def _resources(unit: Unit) -> dict:
    name = ACCELERATOR_RESOURCE.get(unit.vendor, "nvidia.com/gpu")
    return {"limits": {name: unit.pod_chips}, "requests": {name: unit.pod_chips}}


def pod_spec(unit: Unit, engine: str, command: list[str], image: str | None,
             config_map: str | None = None) -> dict:
    """A pod spec running ``command`` on the unit's accelerators, pinned to its domains."""
    container = {"name": engine, "image": image or ENGINE_IMAGE[engine], "command": command[:1],
                 "args": command[1:], "ports": [{"containerPort": PORT, "name": "http"}],
                 "resources": _resources(unit)}
    spec: dict = {"affinity": node_affinity(unit), "containers": [container]}
    if config_map:
        container["volumeMounts"] = [{"name": "engine-config", "mountPath": "/etc/placement"}]
        spec["volumes"] = [{"name": "engine-config", "configMap": {"name": config_map}}]
    return spec


def deployment(unit: Unit, plan_name: str, spec: dict) -> dict:
    """An ``apps/v1`` Deployment of the unit's replicas."""
    labels = pod_labels(unit, plan_name)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": unit.name, "labels": labels},
            "spec": {"replicas": unit.replicas, "selector": {"matchLabels": {"app.kubernetes.io/instance": unit.name}},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def leader_worker_set(unit: Unit, plan_name: str, leader: dict, worker: dict) -> dict:
    """A LeaderWorkerSet: one group of ``unit.nodes`` pods per replica."""
    labels = pod_labels(unit, plan_name)
    meta: dict = {"name": unit.name, "labels": labels}
    if unit.domain_chips == unit.pool.chips_per_replica:  # one replica fills one domain: one group per domain
        meta["annotations"] = {_EXCLUSIVE: LABEL_DOMAIN}
    return {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "metadata": meta,
            "spec": {"replicas": unit.replicas, "startupPolicy": "LeaderCreated",
                     "leaderWorkerTemplate": {
                         "size": unit.nodes, "restartPolicy": "RecreateGroupOnPodRestart",
                         "leaderTemplate": {"metadata": {"labels": {**labels, "placement.io/rank": "leader"}},
                                            "spec": leader},
                         "workerTemplate": {"metadata": {"labels": {**labels, "placement.io/rank": "worker"}},
                                            "spec": worker}}}}


def _multinode(engine: str, command: list[str]) -> tuple[list[str], list[str]]:
    """(leader, worker) commands of a replica spanning several nodes."""
    if engine == "vllm":  # a Ray cluster per replica: the leader heads it and serves
        head = shell_line([ShellWord("ray start --head --port=6379 &&"), *command])
        return ["sh", "-c", head], ["sh", "-c", "ray start --address=$(LWS_LEADER_ADDRESS):6379 --block"]
    if engine == "trtllm":  # MPI ranks launched by trtllm-llmapi-launch on every pod
        return ["trtllm-llmapi-launch", *command], ["trtllm-llmapi-launch", *command]
    return command, command  # SGLang: every node runs the server with its rank (LWS_WORKER_INDEX)


def unit_objects(unit: Unit, plan_name: str, engine: str, command: list[str], image: str | None,
                 config_map: str | None = None) -> list[dict]:
    """The Deployment or LeaderWorkerSet of a unit."""
    if unit.nodes <= 1:
        return [deployment(unit, plan_name, pod_spec(unit, engine, command, image, config_map))]
    lead, work = _multinode(engine, command)
    return [leader_worker_set(unit, plan_name, pod_spec(unit, engine, lead, image, config_map),
                              pod_spec(unit, engine, work, image, config_map))]
