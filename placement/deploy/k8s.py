"""Kubernetes objects for deployable units: pod templates with node affinity, Deployments, LeaderWorkerSets,
a Service per unit.

Every serving pod binds 0.0.0.0:8000 (the engines' flags say so), gets the Hugging Face token from the
secret :data:`HF_TOKEN_SECRET` (key ``HF_TOKEN``; optional, for gated checkpoints), a memory-backed
``/dev/shm`` of :data:`SHM_SIZE` (NCCL and the engines' IPC), and startup, readiness and liveness probes
on the engine's health path — the startup probe allows :data:`STARTUP_S` for weights to load, as the
HTTP servers start only once the model is loaded. Workers of a multi-node replica serve no HTTP and get
no probes. Images default to the pinned :data:`placement.deploy.engines.ENGINE_SPECS` ones.

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

from placement.deploy.engines import ACCELERATOR_RESOURCE, ENGINE_SPECS, PORT
from placement.deploy.names import ShellWord, label_value, shell_line
from placement.deploy.units import LABEL_CHIP, LABEL_DOMAIN, Unit, replica_bounds

__all__ = ["HF_TOKEN_SECRET", "PORT", "SGLANG_BOOTSTRAP_PORT", "SHM_SIZE", "STARTUP_S", "cluster_service", "deployment", "leader_worker_set", "node_affinity",
           "pod_labels", "pod_spec", "service", "unit_objects"]

#: The Secret (key ``HF_TOKEN``) the pods read ``HF_TOKEN`` from: create it for gated checkpoints
#: (``kubectl create secret generic hf-token --from-literal=HF_TOKEN=hf_…``); optional, so open ones need none.
#: Dynamo's ``envFromSecret`` reads the same Secret.
HF_TOKEN_SECRET = "hf-token"
#: Shared memory per pod (NCCL buffers, the engines' IPC): what NVIDIA aiconfigurator 0.12's generated Dynamo
#: files mount.
SHM_SIZE = "64Gi"
#: Seconds the startup probe waits for an engine to load its weights and open its port (a 700 GB checkpoint
#: read at ~1 GB/s).
STARTUP_S = 3600
_STARTUP_PERIOD_S = 30
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


def _probes(path: str) -> dict:
    """Startup (weights loading), readiness and liveness probes on the engine's health path."""
    get = {"httpGet": {"path": path, "port": "http"}}
    return {"startupProbe": {**get, "periodSeconds": _STARTUP_PERIOD_S,
                             "failureThreshold": STARTUP_S // _STARTUP_PERIOD_S},
            "readinessProbe": {**get, "periodSeconds": 10, "failureThreshold": 3},
            "livenessProbe": {**get, "periodSeconds": 30, "failureThreshold": 4, "timeoutSeconds": 10}}


def pod_spec(unit: Unit, engine: str, command: list[str], image: str | None,
             config_map: str | None = None, serves: bool = True) -> dict:
    """A pod spec running ``command`` on the unit's accelerators, pinned to its domains; ``serves``: the pod
    answers HTTP (a Deployment's pods, a multi-node replica's leader), so it gets the port and the probes."""
    container: dict = {"name": engine, "image": image or ENGINE_SPECS[engine].image, "command": command[:1],
                       "args": command[1:],
                       "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
                           "name": HF_TOKEN_SECRET, "key": "HF_TOKEN", "optional": True}}}],
                       "resources": _resources(unit),
                       "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}]}
    volumes: list[dict] = [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}]
    if serves:
        container["ports"] = [{"containerPort": PORT, "name": "http"}, *_extra_ports(unit, engine)]
        container.update(_probes(ENGINE_SPECS[engine].health_path))
    if config_map:
        container["volumeMounts"].append({"name": "engine-config", "mountPath": "/etc/placement"})
        volumes.append({"name": "engine-config", "configMap": {"name": config_map}})
    return {"affinity": node_affinity(unit), "containers": [container], "volumes": volumes}


#: SGLang's prefill servers answer the PD router's KV bootstrap on this port (``--disaggregation-bootstrap-port``
#: default).
SGLANG_BOOTSTRAP_PORT = 8998


def _extra_ports(unit: Unit, engine: str) -> list[dict]:
    if engine == "sglang" and unit.role == "prefill":
        return [{"containerPort": SGLANG_BOOTSTRAP_PORT, "name": "bootstrap"}]
    return []


def cluster_service(name: str, labels: dict[str, str], selector: dict[str, str], extra_ports=()) -> dict:
    """A ClusterIP Service ``name`` on :data:`PORT` (``http``) and ``extra_ports`` (container ports, named)."""
    ports = [{"name": p["name"], "port": p["containerPort"], "targetPort": p["name"], "protocol": "TCP"}
             for p in ({"containerPort": PORT, "name": "http"}, *extra_ports)]
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels},
            "spec": {"type": "ClusterIP", "selector": selector, "ports": ports}}


def service(unit: Unit, plan_name: str, engine: str) -> dict:
    """A ClusterIP Service in front of the unit's serving pods (a multi-node replica's leader)."""
    selector = {"app.kubernetes.io/instance": unit.name}
    if unit.nodes > 1:
        selector["placement.io/rank"] = "leader"
    return cluster_service(unit.name, pod_labels(unit, plan_name), selector, _extra_ports(unit, engine))


def _scaling_hints(unit: Unit) -> dict[str, str]:
    """Annotations bounding an autoscaler: the replicas the planned load needs at the capacity band's p90 and p10
    (:func:`placement.deploy.units.replica_bounds`)."""
    fewest, most = replica_bounds(unit)
    return {"placement.io/min-replicas": str(fewest), "placement.io/max-replicas": str(most)}


def deployment(unit: Unit, plan_name: str, spec: dict) -> dict:
    """An ``apps/v1`` Deployment of the unit's replicas."""
    labels = pod_labels(unit, plan_name)
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": unit.name, "labels": labels, "annotations": _scaling_hints(unit)},
            "spec": {"replicas": unit.replicas, "selector": {"matchLabels": {"app.kubernetes.io/instance": unit.name}},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def leader_worker_set(unit: Unit, plan_name: str, leader: dict, worker: dict) -> dict:
    """A LeaderWorkerSet: one group of ``unit.nodes`` pods per replica."""
    labels = pod_labels(unit, plan_name)
    meta: dict = {"name": unit.name, "labels": labels, "annotations": _scaling_hints(unit)}
    if unit.domain_chips == unit.pool.chips_per_replica:  # one replica fills one domain: one group per domain
        meta["annotations"][_EXCLUSIVE] = LABEL_DOMAIN
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
    """The Deployment or LeaderWorkerSet of a unit, and its Service."""
    if unit.nodes <= 1:
        workload = deployment(unit, plan_name, pod_spec(unit, engine, command, image, config_map))
    else:
        lead, work = _multinode(engine, command)
        workload = leader_worker_set(unit, plan_name, pod_spec(unit, engine, lead, image, config_map),
                                     pod_spec(unit, engine, work, image, config_map, serves=False))
    return [workload, service(unit, plan_name, engine)]
