"""An instance with its catalogue references resolved, and its fleet graph.

Examples
--------
>>> from placement.core.instance.context import Context
>>> from placement.core.instance.loading import parse_instance
>>> inst = parse_instance({
...     "name": "t", "model": "llama-3.1-8b",
...     "workload": {"classes": [{"name": "c", "rate_rps": 1, "prompt_tokens": 100,
...                               "output_tokens": 10, "ttft_ms": 1000, "tpot_ms": 100}]},
...     "hardware": {"domains": [{"name": "g", "chip": "h100", "count": 1}]}})
>>> Context.of(inst).sites["g"].chips_per_domain
8
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import networkx as nx

from costmodels.bands import ChipBand, chip_band
from costmodels.models import ModelSpec
from placement.core.instance.calibration_overlay import overlay_band
from placement.core.instance.loading import chips_of, draft_model_of, model_of
from placement.core.instance.schema import DomainGroup, Instance, TrafficClass
from topology.chips import ChipSpec
from topology.graph import fleet_graph
from topology.routing import Routing

__all__ = ["Context", "SiteInfo", "resource_key"]


def resource_key(chip: str, chips_per_domain: int) -> str:
    """Sites of one chip type and domain size are interchangeable resources."""
    return f"{chip}@{chips_per_domain}"


@dataclass(frozen=True)
class SiteInfo:
    """A domain group with its resolved chip, domain size, uplink and price."""

    group: DomainGroup
    chip: ChipSpec
    chips_per_domain: int
    uplink_bytes_per_s: float
    usd_per_hour_per_chip: float

    @property
    def resource(self) -> str:
        return resource_key(self.chip.name, self.chips_per_domain)

    @property
    def chips(self) -> int:
        return self.chips_per_domain * self.group.count


@dataclass(frozen=True)
class Context:
    """Everything derived once from an instance: chips, model, sites, graph."""

    instance: Instance
    chips: dict[str, ChipSpec]
    model: ModelSpec
    draft_model: ModelSpec | None
    sites: dict[str, SiteInfo]
    graph: nx.DiGraph
    source: str = "<instance>"
    classes: dict[str, TrafficClass] = field(default_factory=dict)
    #: Holding cost of the KV tiers a plan uses, part of its cost (set by :mod:`placement.core.verify.kv`).
    kv_usd_per_hour: float = 0.0
    #: Domain group -> indices of its failed domains (unusable; see :mod:`placement.core.instance.failures`).
    failed_domains: dict[str, tuple[int, ...]] = field(default_factory=dict)
    #: The instance as given, when ``instance`` is it as planned (``slo_headroom`` applied): what provenance hashes.
    given: Instance | None = None

    @classmethod
    def of(cls, inst: Instance, source: str = "<instance>") -> Context:
        given, inst = inst, inst.planned()  # every class at its SLOs × slo_headroom from here on
        chips = chips_of(inst)
        sites: dict[str, SiteInfo] = {}
        for d in inst.hardware.domains:
            chip = chips[d.chip]
            size = d.chips_per_domain or chip.scale_up_domain_chips
            uplink = d.uplink_bytes_per_s or size * chip.scale_out_bandwidth_bytes_per_s
            price = d.usd_per_hour_per_chip or chip.usd_per_hour
            sites[d.name] = SiteInfo(d, chip, size, uplink, price)
        graph = fleet_graph(
            [
                {"name": n, "chip": s.chip.name, "chips_per_domain": s.chips_per_domain, "count": s.group.count,
                 "switch": s.group.switch, "uplink_bytes_per_s": s.uplink_bytes_per_s,
                 "uplink_latency_s": s.group.uplink_latency_s}
                for n, s in sites.items()
            ],
            switches=inst.hardware.switches,
            links=[
                {"source": link.source, "target": link.target, "bandwidth_bytes_per_s": link.bandwidth_bytes_per_s,
                 "latency_s": link.latency_s}
                for link in inst.hardware.links
            ],
        )
        return cls(
            instance=inst,
            chips=chips,
            model=model_of(inst, source),
            draft_model=draft_model_of(inst, source),
            sites=sites,
            graph=graph,
            source=source,
            classes={c.name: c for c in inst.workload.classes},
            given=given if given is not inst else None,
        )

    def band(self, chip: str) -> ChipBand:
        """The error band ``chip`` is priced with: the calibration overlay's, else its catalogue family's."""
        return overlay_band(self.instance.calibration, chip) or chip_band(chip)

    def most_pipeline_stages(self, chip: str, chips: int, chips_per_domain: int) -> int | None:
        """The most pipeline stages a replica part of ``chips`` chips of ``chip`` (domains of
        ``chips_per_domain``) may run; ``None``: no limit beyond the model's layers.

        ``serving.max_pipeline_stages`` when the instance sets it. Otherwise what the chip's factors rest on —
        the calibration overlay's ``pipeline_stages`` for a chip it lists and states them for, else the
        catalogue's ``calibrated_pipeline_stages`` — raised to ⌈chips / chips_per_domain⌉, the fewest stages
        with each stage inside one scale-up domain, so a replica too large for one domain can still be built
        (its plan says it rests on the step model there). A chip with no calibrated stages has no limit.

        Examples
        --------
        >>> from placement.core.instance.loading import load_instance
        >>> ctx = Context.of(load_instance("instances/melange-toy.yaml"))
        >>> [ctx.most_pipeline_stages("h100", n, 8) for n in (1, 8, 16)]
        [1, 1, 2]
        """
        explicit = self.instance.serving.max_pipeline_stages
        if explicit is not None:
            return explicit
        overlay = self.instance.calibration
        listed = None if overlay is None else overlay.chips.get(chip)
        spec = self.chips.get(chip)
        seen = listed.pipeline_stages if listed is not None and listed.pipeline_stages is not None else \
            None if spec is None else spec.calibrated_pipeline_stages
        return None if seen is None else max(seen, -(-chips // chips_per_domain))

    @cached_property
    def routing(self) -> Routing:
        """Lowest-latency paths of the fleet graph, computed once per context (as the MILP routes)."""
        return Routing(self.graph)

    def resources(self) -> dict[str, SiteInfo]:
        """One representative site per resource (chip type @ domain size), sorted (a new dict each call)."""
        return dict(self._resources)

    @cached_property
    def _resources(self) -> dict[str, SiteInfo]:
        """:meth:`resources`, worked out once: generation asks hundreds of times, and on a fleet of hundreds
        of sites sorting them and naming each one's resource was a tenth of its time."""
        out: dict[str, SiteInfo] = {}
        for name in sorted(self.sites):
            out.setdefault(self.sites[name].resource, self.sites[name])
        return out
