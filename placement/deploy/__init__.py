"""From a plan to deployment documents: Kubernetes, Dynamo or llm-d, engine arguments and a benchmark script.

:func:`build` returns the files of a deployment folder (relative path -> text):

=========================  ====================================================================
file                       what it holds
=========================  ====================================================================
``k8s.yaml``               (``--format k8s``) Deployments / LeaderWorkerSets and a Service per unit (+ TRT-LLM
                           ConfigMaps); per class an HTTPRoute weighted by the plan's rates and a PD router
``dynamo.yaml``            (``--format dynamo``) DynamoGraphDeployment(s) (+ TRT-LLM ConfigMaps)
``llm-d/<unit>.yaml``      (``--format llm-d``) values of one llm-d-modelservice release per unit
``inference-pools.yaml``   (``--format llm-d``) per class an InferencePool and the HTTPRoute to it
``vendor-neutral.yaml``    PlacementPool records of units no engine runs (LPX, WSE-3, Corsair, Bertha…)
``bench.sh``               per class, aiperf at the planned rate and a TTFT / TPOT check
``README.md``              what was written, per unit, and what is vendor-neutral and why
=========================  ====================================================================

See ``docs/deploy.md``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import yaml

from placement.core.instance.errors import InputError
from placement.core.plans.plan import Plan
from placement.core.plans.provenance import require_known_models
from placement.deploy.bench import bench_script
from placement.deploy.checkpoints import HF_ID, checkpoint_for
from placement.deploy.engines import ENGINE_SPECS, ENGINES, engine_args, trtllm_options
from placement.deploy.formats import (
    dynamo_graphs,
    llmd_model_label,
    llmd_values,
    neutral_pool,
    trtllm_dynamo_options,
)
from placement.deploy.k8s import unit_objects
from placement.deploy.names import check_chips_per_node, check_image, dns_name
from placement.deploy.routes import class_routes, inference_pools
from placement.deploy.units import Unit, unit_rate_rps, units_of

if TYPE_CHECKING:
    from placement.core.instance.schema import Instance

__all__ = ["FORMATS", "build", "hf_id", "longest_request_tokens", "served_checkpoint", "written_here"]

FORMATS = ("k8s", "dynamo", "llm-d")
#: The files :func:`build` may write (besides ``llm-d/<unit>.yaml``).
_FILES = frozenset({"k8s.yaml", "dynamo.yaml", "inference-pools.yaml", "vendor-neutral.yaml", "bench.sh", "README.md"})
_OPTIONS_PATH = "/etc/placement/engine.yaml"


def written_here(rel: str) -> bool:
    """Whether ``rel`` (a path relative to the folder; a folder's ends in ``/``) is one :func:`build` may write.

    Examples
    --------
    >>> written_here("k8s.yaml"), written_here("llm-d/"), written_here("llm-d/fleet-pool-01-h100.yaml")
    (True, True, True)
    >>> written_here("notes.txt"), written_here("secrets/"), written_here("llm-d/x/y.yaml")
    (False, False, False)
    """
    return rel in _FILES or rel == "llm-d/" or re.fullmatch(r"llm-d/[^/]+\.yaml", rel) is not None


def hf_id(model: str) -> str:
    """The Hugging Face id of a catalogue model's architecture (its first ``hf_ids`` entry, else the name)."""
    from costmodels.models import load_model_catalog

    spec = load_model_catalog().get(model)
    return spec.hf_ids[0] if spec is not None and spec.hf_ids else model


def served_checkpoint(model: str, weights: str, given: str | None = None) -> tuple[str, str | None]:
    """(the checkpoint engines load, a warning or None): ``given`` (``deploy --checkpoint``), else the sourced
    checkpoint of ``model`` in the plan's weight precision (``checkpoints.yaml``), else the architecture's
    repository with a warning naming what to supply.

    Examples
    --------
    >>> served_checkpoint("llama-3.1-70b", "fp8")
    ('nvidia/Llama-3.1-70B-Instruct-FP8', None)
    >>> served_checkpoint("llama-3.2-1b", "fp4")[1]
    'no known fp4 checkpoint of llama-3.2-1b: the plan assumes fp4 weights; give --checkpoint ORG/NAME (serving meta-llama/Llama-3.2-1B-Instruct meanwhile)'
    """
    if given is not None:
        if not HF_ID.fullmatch(given):
            raise InputError(f"expected a Hugging Face repository id (org/name), got {given!r}", field="--checkpoint")
        return given, None
    if (found := checkpoint_for(model, weights)) is not None:
        return found, None
    base = hf_id(model)
    return base, (f"no known {weights} checkpoint of {model}: the plan assumes {weights} weights; give --checkpoint "
                  f"ORG/NAME (serving {base} meanwhile)")


def longest_request_tokens(cls) -> int:
    """Prefix + prompt + output of a class's longest request (a histogram's largest lengths, a lognormal's
    99.9th percentiles): the context an engine must accept.

    Examples
    --------
    >>> from placement.core.instance.schema import TrafficClass
    >>> longest_request_tokens(TrafficClass(name="c", rate_rps=1, prompt_tokens=200, output_tokens=100, ttft_ms=1000,
    ...     tpot_ms=50, prompt_lengths={"histogram": [[100, 1], [300, 1]]}))
    400
    """
    def top(mean: int, dist) -> float:
        if dist is None:
            return float(mean)
        return float(max(t for t, _ in dist.histogram)) if dist.histogram else dist.quantile(mean, 0.999)

    return (cls.cached_prefix_tokens + math.ceil(top(cls.prompt_tokens, cls.prompt_lengths))
            + math.ceil(top(cls.output_tokens, cls.output_lengths)))


class _Dumper(yaml.SafeDumper):
    """Safe YAML without anchors and aliases (a label dict shared by two objects is written twice)."""

    def ignore_aliases(self, data) -> bool:
        return True


def _dump(docs: list[dict]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, width=120)


def _config_map(unit: Unit, data: dict) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": dns_name(unit.name, "engine")},
            "data": {"engine.yaml": yaml.safe_dump(data, sort_keys=False)}}


def _k8s(units: list[Unit], plan: Plan, engine: str, model: str, image: str | None) -> list[dict]:
    docs: list[dict] = []
    for u in units:
        assert u.layout is not None
        cm = None
        if engine == "trtllm":
            cm_doc = _config_map(u, trtllm_options(u.layout))
            docs.append(cm_doc)
            cm = cm_doc["metadata"]["name"]
        docs += unit_objects(u, plan.instance, engine, engine_args(engine, u.layout, model, _OPTIONS_PATH), image,
                             cm)
    routes, notes = class_routes(units, plan, engine, image or ENGINE_SPECS[engine].image)
    for u in units:
        u.notes.extend(notes)
    return docs + routes


def _dynamo(units: list[Unit], plan: Plan, engine: str, model: str, image: str | None) -> list[dict]:
    docs: list[dict] = []
    graphs = dynamo_graphs(units, plan.instance, engine, model, image, _OPTIONS_PATH)
    if engine == "trtllm":
        by_service = {}
        for u in units:
            assert u.layout is not None
            cm = _config_map(u, trtllm_dynamo_options(u.layout))
            docs.append(cm)
            by_service[u.name] = cm["metadata"]["name"]
        for g in graphs:
            for svc in g["spec"]["services"].values():
                name = svc.get("labels", {}).get("placement.io/unit")
                if name in by_service:
                    svc["extraPodSpec"]["volumes"] = [{"name": "engine-config",
                                                       "configMap": {"name": by_service[name]}}]
                    svc["extraPodSpec"]["mainContainer"]["volumeMounts"] = [
                        {"name": "engine-config", "mountPath": "/etc/placement"}]
    return docs + graphs


#: How each format routes a class's requests to its units (the folder README's traffic section).
_ROUTING = {"k8s": "A request for class C is sent to `/C/v1/…` on the Gateway with model `C`; the class's HTTPRoute "
                   "weighs its aggregated units and its prefill→decode router by these rates.",
            "dynamo": "A request names its class as the model; the Frontend routes it to that class's workers.",
            "llm-d": "Each class's releases share one `llm-d.ai/model` label; the class's InferencePool "
                     "(inference-pools.yaml), reached at `/C/` on the Gateway, routes them through its endpoint "
                     "picker."}


def _readme(plan: Plan, fmt: str, engine: str, model: str, units: list[Unit]) -> str:
    lines = [f"# Deployment of plan `{plan.instance}` ({fmt}, {engine})", "",
             (f"Model `{model}`. Generated by `placement deploy`; see docs/deploy.md for the node labels "
             "(`placement.io/chip`, `placement.io/domain-group`, `placement.io/domain`) and how to apply it."), "",
             "| unit | stage | chip | replicas | chips/replica | nodes/replica | domains | runs on |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for u in units:
        runs = "vendor-neutral" if u.neutral_reason else engine
        lines.append(f"| {u.name} | {u.pool.stage} | {u.pool.chip} | {u.replicas} | {u.pool.chips_per_replica} | "
                     f"{u.nodes} | {', '.join(u.domain_values) or '-'} | {runs} |")
    lines += ["", "## Traffic", "",
              (f"Each class's requests/s by the unit that serves them (the plan's loads). {_ROUTING[fmt]}"), "",
              "| class | unit | stage | req/s |", "| --- | --- | --- | --- |"]
    lines += [f"| {u.pool.traffic_class} | {u.name} | {u.pool.stage} | {unit_rate_rps(u):.4g} |"
              for cp in plan.classes for u in units if u.pool.traffic_class == cp.name and unit_rate_rps(u) > 0]
    neutral = [u for u in units if u.neutral_reason]
    if neutral:
        lines += ["", "## Vendor-neutral units", "",
                  ("No engine this command writes for runs these units: `vendor-neutral.yaml` records what the plan "
                  "decided (chip, replicas, layout, batch, domains, predicted latencies) for the vendor's own "
                  "serving stack to realise. They are NOT deployed by the other files."), ""]
        lines += [f"- `{u.name}`: {u.neutral_reason}" for u in neutral]
    notes = sorted({n for u in units for n in u.notes})
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def build(plan: Plan, *, fmt: str, engine: str, instance: Instance | None = None, image: str | None = None,
          chips_per_node: dict[str, int] | None = None, checkpoint: str | None = None,
          warn: Callable[[str], None] | None = None) -> dict[str, str]:
    """The files of a deployment folder for ``plan`` (relative path -> text); ``warn`` hears what the user must
    supply (a checkpoint in the plan's precision)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}", field="--format")
    if engine not in ENGINES:
        raise InputError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}", field="--engine")
    check_image(image)  # a library caller's image and node sizes are checked as the CLI's are
    check_chips_per_node(chips_per_node)
    if fmt == "llm-d" and engine != "vllm":
        raise InputError(f"the llm-d modelservice chart runs vLLM; expected --engine vllm with --format llm-d, "
                         f"got {engine}", field="--engine")
    if plan.status not in ("optimal", "feasible", "time_limit") or not plan.pools:
        raise InputError(f"plan has status {plan.status!r} and {len(plan.pools)} pools; nothing to deploy",
                         field="status")
    prov = plan.provenance
    if prov is None and instance is None:
        raise InputError("the plan does not say its model and precision (written before provenance was "
                         "recorded); give --instance", field="provenance")
    if instance is not None:
        from placement.core.instance.loading import draft_model_of, model_of

        model_name, kv = model_of(instance).name, instance.precision.kv
        draft = draft_model_of(instance)
        draft_name = None if draft is None else draft.name
    else:
        assert prov is not None
        require_known_models(prov, set(), "not a catalogue model; give --instance (the instance that defines "
                             "it, against which the plan is verified)")
        model_name, kv, draft_name = prov.model, prov.precision_kv, prov.draft_model
    weights = instance.precision.weights if instance is not None else prov.precision_weights  # type: ignore[union-attr]
    model, missing = served_checkpoint(model_name, weights, checkpoint)
    max_tokens = None if instance is None else {c.name: longest_request_tokens(c) for c in instance.workload.classes}
    units = units_of(plan, engine, kv=kv, draft_model=None if draft_name is None else hf_id(draft_name),
                     chips_per_node=chips_per_node, max_tokens=max_tokens)
    if missing is not None:
        if warn is not None:
            warn(missing)
        for u in units:
            u.notes.append(missing)
    if kv == "fp4":
        for u in units:
            u.notes.append("KV cache planned in FP4; the engines' flags offer FP8 at most, so FP8 is set "
                           "(more KV memory than planned)")
    runnable = [u for u in units if u.neutral_reason is None]
    files: dict[str, str] = {}
    if fmt == "k8s" and runnable:
        files["k8s.yaml"] = _dump(_k8s(runnable, plan, engine, model, image))
    elif fmt == "dynamo" and runnable:
        files["dynamo.yaml"] = _dump(_dynamo(runnable, plan, engine, model, image))
    elif fmt == "llm-d":
        for u in runnable:
            files[f"llm-d/{u.name}.yaml"] = _dump([llmd_values(u, model, image)])
        if runnable:
            files["inference-pools.yaml"] = _dump(inference_pools(runnable, plan, lambda c: llmd_model_label(model, c)))
    neutral = [u for u in units if u.neutral_reason]
    if neutral:
        files["vendor-neutral.yaml"] = _dump([neutral_pool(u, plan.instance) for u in neutral])
    tokens, stats = {}, {}
    if instance is not None:
        for c in instance.workload.classes:
            tokens[c.name] = (c.cached_prefix_tokens + c.prompt_tokens, c.output_tokens,
                              round(c.prompt_tokens * c.prompt_squared_cv ** 0.5),
                              round(c.output_tokens * c.output_squared_cv ** 0.5))
            stats[c.name] = c.slo_percentile
    files["bench.sh"] = bench_script(plan, model, tokens, stats, routed=fmt == "k8s", named=engine != "trtllm",
                                     engine=engine)
    files["README.md"] = _readme(plan, fmt, engine, model, units)
    return files
