"""Engine command lines for one pool: vLLM, SGLang and TensorRT-LLM, and which chips each engine targets.

Each engine is a record (:data:`ENGINE_SPECS`) at the version its flags were read from: its image, the
flag list of its own argument parser (``placement/deploy/flags/``, with source, commit and date; the
``*-notes.md`` beside them quote what each flag used here means), its health path, and whether its
running-sequence cap is per data-parallel rank or per server. A pool's layout maps onto the flags:

=================  ===============================  ==================================  =============================
plan               vLLM (``vllm serve``)            SGLang (``sglang.launch_server``)   TRT-LLM (``trtllm-serve``)
=================  ===============================  ==================================  =============================
bind               ``--host 0.0.0.0 --port 8000``   same (default 127.0.0.1:30000)      same (default localhost)
class              ``--served-model-name``          ``--served-model-name``             (the checkpoint's name)
longest request    ``--max-model-len``              ``--context-length``                ``--max_seq_len``
tp                 ``--tensor-parallel-size``       ``--tp-size`` (tp·dp with DP attn)  ``--tp_size`` (tp·dp)
pp                 ``--pipeline-parallel-size``     ``--pp-size``                       ``--pp_size``
dp (attention)     ``--data-parallel-size``         ``--dp-size --enable-dp-attention`` ``enable_attention_dp`` (yaml)
ep > 1             ``--enable-expert-parallel``     ``--ep-size``                       ``--ep_size``
batch B            ``--max-num-seqs`` ⌈B/dp⌉        ``--max-running-requests`` B        ``--max_batch_size`` ⌈B/dp⌉
chunk C            ``--max-num-batched-tokens`` C   ``--chunked-prefill-size`` dp·C     ``--max_num_tokens`` C
KV fp8             ``--kv-cache-dtype fp8``         ``--kv-cache-dtype fp8_e4m3``       ``kv_cache_config.dtype`` (yaml)
draft (γ tokens)   ``--speculative-config``         ``--speculative-*``                 ``speculative_config`` (yaml)
prefill / decode   ``--kv-transfer-config`` (NIXL)  ``--disaggregation-mode``           ``cache_transceiver_config``
multi-node         ``--data-parallel-backend ray``  ``--nnodes --node-rank``            ``trtllm-llmapi-launch``
=================  ===============================  ==================================  =============================

Examples
--------
>>> a = EngineLayout(tp=4, pp=1, dp=1, ep=1, batch=64, chunk_tokens=None, kv="fp8", role="decode")
>>> " ".join(vllm_args(a, "meta-llama/Llama-3.1-70B-Instruct"))  # doctest: +NORMALIZE_WHITESPACE
'vllm serve meta-llama/Llama-3.1-70B-Instruct --host 0.0.0.0 --port 8000 --tensor-parallel-size 4
 --pipeline-parallel-size 1 --max-num-seqs 64 --kv-cache-dtype fp8
 --kv-transfer-config {"kv_connector":"NixlConnector","kv_role":"kv_both"}'
>>> target_engines("bertha"), target_engines("h100")
((), ('vllm', 'sglang', 'trtllm'))
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal

__all__ = [
    "ACCELERATOR_RESOURCE",
    "CHIPS_PER_NODE",
    "ENGINES",
    "ENGINE_SPECS",
    "PORT",
    "EngineLayout",
    "EngineSpec",
    "engine_args",
    "sglang_args",
    "target_engines",
    "trtllm_args",
    "trtllm_options",
    "vendored_list",
    "vllm_args",
]

ENGINES = ("vllm", "sglang", "trtllm")
Role = Literal["aggregated", "prefill", "decode"]
#: The port every engine container listens on (and its probes and Service target).
PORT = 8000
_FLAGS = Path(__file__).with_name("flags")


@dataclass(frozen=True)
class EngineSpec:
    """One serving engine at the version its flags were read from: image, flags, binding and batch semantics.

    ``flags_file`` is the engine's own argument parser at that version, vendored in
    ``placement/deploy/flags/`` with its source and date (the notes beside it quote what each flag
    used here means); every generated command is checked against it. ``batch_cap`` says what the
    engine's running-sequence cap bounds under data-parallel attention: ``"rank"`` — each of the
    ``dp`` ranks (vLLM ``--max-num-seqs``, TRT-LLM ``--max_batch_size``), so a replica of B
    sequences sets ⌈B/dp⌉ — or ``"replica"`` — the whole server, split over the ranks (SGLang
    ``--max-running-requests``, whose ``--chunked-prefill-size`` is also split: dp·C).
    """

    name: str
    version: str
    image: str
    flags_file: str
    health_path: str
    default_bind: str
    batch_cap: Literal["rank", "replica"]

    def flags(self) -> frozenset[str]:
        """The flags the engine's parser accepts at :attr:`version` (from :attr:`flags_file`)."""
        return vendored_list(self.flags_file)


@cache
def vendored_list(name: str) -> frozenset[str]:
    """The entries of a vendored list in ``placement/deploy/flags/`` (one per line; ``#`` lines are its header)."""
    lines = (_FLAGS / name).read_text().splitlines()
    return frozenset(ln.strip() for ln in lines if ln.strip() and not ln.startswith("#"))


#: The engines at their pinned versions (``placement/deploy/flags/*-notes.md`` quote the sources).
ENGINE_SPECS = {
    "vllm": EngineSpec("vllm", "v0.25.1", "vllm/vllm-openai:v0.25.1", "vllm.txt", "/health", "0.0.0.0:8000",
                       "rank"),
    "sglang": EngineSpec("sglang", "commit 001067f (after 2026-07-30)", "lmsysorg/sglang:v0.5.23", "sglang.txt",
                         "/health", "127.0.0.1:30000", "replica"),
    "trtllm": EngineSpec("trtllm", "1.3.0rc3", "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc3", "trtllm.txt",
                         "/health", "localhost:8000", "rank"),
}

#: Chip -> engines that run it. vLLM and SGLang run NVIDIA and AMD GPUs; TensorRT-LLM runs NVIDIA only;
#: vLLM runs Trainium through the Neuron plugin (vllm-neuron). LPX/LP30, Groq LPU, WSE-3 (CS-3), Corsair
#: and Bertha ship their own serving stacks: no listed engine targets them.
_ENGINES_OF_VENDOR = {"NVIDIA": ENGINES, "AMD": ("vllm", "sglang"), "AWS": ("vllm",)}

#: Chip -> Kubernetes extended resource its device plugin advertises.
ACCELERATOR_RESOURCE = {"NVIDIA": "nvidia.com/gpu", "AMD": "amd.com/gpu", "AWS": "aws.amazon.com/neuron"}

#: Accelerators per node (the pod size of one replica's rank group): 8-GPU HGX/OAM boards; 4 GPUs per
#: compute tray in NVL72-class racks (GB200, GB300, Vera Rubin); 16 Trainium per trn2/trn3 node;
#: A10G and L4 as 8 per g5.48xlarge / g6.48xlarge. Override with ``deploy --chips-per-node chip=N``.
CHIPS_PER_NODE = {"h100": 8, "h200": 8, "b200": 8, "gb200": 4, "gb300": 4, "rubin": 4, "mi300x": 8,
                  "mi355x": 8, "a10g": 8, "a100-80gb": 8, "l4": 8, "trainium2": 16, "trainium3": 16}


def target_engines(chip: str, vendor: str | None = None) -> tuple[str, ...]:
    """Engines that run ``chip`` (by its vendor; a user chip with ``base`` takes its base's vendor)."""
    if vendor is None:
        from topology.chips import load_chip_catalog

        spec = load_chip_catalog().get(chip)
        vendor = spec.vendor if spec is not None else ""
    if chip not in CHIPS_PER_NODE and vendor not in ("NVIDIA", "AMD"):
        return ()
    return _ENGINES_OF_VENDOR.get(vendor, ())


@dataclass(frozen=True)
class EngineLayout:
    """What an engine needs of one pool: parallelism, batch (the replica's sequences), chunk, KV dtype, role,
    speculative draft, nodes, and the name it serves (the class) with the longest request it must hold."""

    tp: int
    pp: int
    dp: int
    ep: int
    batch: int
    chunk_tokens: int | None
    kv: str
    role: Role
    draft_model: str | None = None
    draft_tokens: int | None = None
    nodes: int = 1
    served_name: str | None = None
    max_model_len: int | None = None

    def batch_for(self, engine: str) -> int:
        """The engine's running-sequence cap for this replica (:class:`EngineSpec` ``batch_cap``).

        Examples
        --------
        >>> a = EngineLayout(tp=1, pp=1, dp=8, ep=8, batch=271, chunk_tokens=None, kv="fp8", role="decode")
        >>> a.batch_for("vllm"), a.batch_for("sglang"), a.batch_for("trtllm")
        (34, 271, 34)
        """
        return self.batch if ENGINE_SPECS[engine].batch_cap == "replica" else -(-self.batch // self.dp)

    @property
    def chips(self) -> int:
        return self.tp * self.pp * self.dp


def _kv_transfer(role: Role) -> list[str]:
    if role == "aggregated":
        return []
    config = {"kv_connector": "NixlConnector", "kv_role": "kv_both"}
    return ["--kv-transfer-config", json.dumps(config, separators=(",", ":"))]


def _serving(a: EngineLayout, name_flag: str, length_flag: str) -> list[str]:
    """Bind every interface on :data:`PORT` (engines default to loopback or another port), serve the class's
    name, hold its longest request."""
    args = ["--host", "0.0.0.0", "--port", str(PORT)]
    if a.served_name:
        args += [name_flag, a.served_name]
    if a.max_model_len:
        args += [length_flag, str(a.max_model_len)]
    return args


def vllm_args(a: EngineLayout, model: str) -> list[str]:
    """``vllm serve`` command line of a pool (``--max-num-seqs`` per data-parallel rank)."""
    args = ["vllm", "serve", model, *_serving(a, "--served-model-name", "--max-model-len"),
            "--tensor-parallel-size", str(a.tp), "--pipeline-parallel-size", str(a.pp)]
    if a.dp > 1:
        args += ["--data-parallel-size", str(a.dp)]
    if a.ep > 1:
        args += ["--enable-expert-parallel"]
    args += ["--max-num-seqs", str(a.batch_for("vllm"))]
    if a.chunk_tokens:
        args += ["--enable-chunked-prefill", "--max-num-batched-tokens", str(a.chunk_tokens)]
    if a.kv in ("fp8", "fp4"):
        args += ["--kv-cache-dtype", "fp8"]
    if a.draft_model and a.draft_tokens:
        spec = {"model": a.draft_model, "num_speculative_tokens": a.draft_tokens}
        args += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
    if a.nodes > 1:
        # A Ray cluster per replica: data-parallel ranks placed by Ray, and a TP·PP group wider than a node
        # run by Ray's executor.
        if a.dp > 1:
            args += ["--data-parallel-backend", "ray"]
        if a.tp * a.pp > a.chips // a.nodes:
            args += ["--distributed-executor-backend", "ray"]
    return args + _kv_transfer(a.role)


def sglang_args(a: EngineLayout, model: str) -> list[str]:
    """``python3 -m sglang.launch_server`` command line of a pool (multi-node ranks from LWS variables).

    ``--max-running-requests`` and ``--chunked-prefill-size`` are the whole server's: SGLang gives each
    of the ``dp`` attention ranks 1/dp of them."""
    args = ["python3", "-m", "sglang.launch_server", "--model-path", model,
            *_serving(a, "--served-model-name", "--context-length"), "--tp-size", str(a.tp * a.dp),
            "--pp-size", str(a.pp)]
    if a.dp > 1:
        args += ["--dp-size", str(a.dp), "--enable-dp-attention"]
    if a.ep > 1:
        args += ["--ep-size", str(a.ep)]
    args += ["--max-running-requests", str(a.batch_for("sglang"))]
    if a.chunk_tokens:
        args += ["--chunked-prefill-size", str(a.chunk_tokens * a.dp)]
    if a.kv in ("fp8", "fp4"):
        args += ["--kv-cache-dtype", "fp8_e4m3"]
    if a.draft_model and a.draft_tokens:
        args += ["--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", a.draft_model,
                 "--speculative-num-steps", str(a.draft_tokens), "--speculative-num-draft-tokens",
                 str(a.draft_tokens + 1)]
    if a.role != "aggregated":
        args += ["--disaggregation-mode", a.role]
    if a.nodes > 1:
        args += ["--nnodes", str(a.nodes), "--node-rank", "$(LWS_WORKER_INDEX)", "--dist-init-addr",
                 "$(LWS_LEADER_ADDRESS):5000"]
    return args


def trtllm_options(a: EngineLayout) -> dict:
    """The ``--extra_llm_api_options`` YAML of a pool (what ``trtllm-serve`` takes no flag for)."""
    opts: dict = {"enable_attention_dp": a.dp > 1}
    if a.kv in ("fp8", "fp4"):
        opts["kv_cache_config"] = {"dtype": "fp8"}
    if a.chunk_tokens:
        opts["enable_chunked_prefill"] = True
    if a.draft_model and a.draft_tokens:
        opts["speculative_config"] = {"decoding_type": "Eagle", "max_draft_len": a.draft_tokens,
                                      "speculative_model_dir": a.draft_model}
    if a.role != "aggregated":
        opts["cache_transceiver_config"] = {"backend": "DEFAULT"}
    return opts


def trtllm_args(a: EngineLayout, model: str, options_path: str) -> list[str]:
    """``trtllm-serve`` command line of a pool (``--max_batch_size`` per attention-DP rank); the rest is in the
    options file at ``options_path``. TRT-LLM serves the checkpoint under its own name (no served-name flag)."""
    args = ["trtllm-serve", model, "--host", "0.0.0.0", "--port", str(PORT), "--backend", "pytorch",
            "--tp_size", str(a.tp * a.dp), "--pp_size", str(a.pp), "--ep_size", str(a.ep),
            "--max_batch_size", str(a.batch_for("trtllm"))]
    if a.chunk_tokens:
        args += ["--max_num_tokens", str(a.chunk_tokens)]
    if a.max_model_len:
        args += ["--max_seq_len", str(a.max_model_len)]
    return args + ["--extra_llm_api_options", options_path]


def engine_args(engine: str, a: EngineLayout, model: str, options_path: str = "/etc/placement/engine.yaml",
                ) -> list[str]:
    """The command line of ``engine`` for a pool."""
    if engine == "vllm":
        return vllm_args(a, model)
    if engine == "sglang":
        return sglang_args(a, model)
    if engine == "trtllm":
        return trtllm_args(a, model, options_path)
    raise ValueError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
