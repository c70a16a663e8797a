"""Readers of the standard benchmark clients' result files, each in its own format.

Each reader takes the parsed document and returns, per record, what the file
*states*: the model as named, lengths, concurrency, TTFT/TPOT/ITL statistics,
throughputs, and (where the format records them) hardware, framework and
layout — with ``notes`` saying how each figure was reconciled with the
definitions of :mod:`placement.measure.points`. What a file does not state is
asked for by flag (:func:`placement.measure.importer.import_files`).

Formats
-------
``vllm``
    ``vllm bench serve --save-result`` (and ``benchmarks/benchmark_serving.py``):
    one JSON object; ms; ``mean_tpot_ms`` = per request (latency − TTFT)/(output − 1),
    averaged over requests; ``--metadata`` keys (``tensor_parallel_size``…) when given.
``sglang``
    ``python -m sglang.bench_serving --output-file``: JSON Lines, one run per
    line; the same definitions as vLLM's (its client derives from vLLM's);
    ``concurrency`` = Σ request latencies ÷ duration, the mean in flight.
``aiperf``, ``genai-perf``
    ``profile_export_aiperf.json`` / ``profile_export_genai_perf.json``: one record
    per metric with its ``unit`` and statistics; their ``inter_token_latency`` is
    per request (latency − TTFT)/(output − 1) — this project's TPOT.
``inferencex``
    InferenceX ``agg_*.json`` (``utils/process_result.py``): seconds, throughputs per
    GPU, hardware and layout stated.

Examples
--------
>>> doc = {"model_id": "m", "completed": 10, "total_input_tokens": 10240, "total_output_tokens": 1280,
...        "max_concurrency": 4, "request_rate": float("inf"), "request_throughput": 2.0,
...        "output_throughput": 256.0, "mean_ttft_ms": 50.0, "mean_tpot_ms": 8.0}
>>> rec = read_vllm(doc, "run.json")[0]
>>> rec["prompt_tokens"], rec["concurrency"], rec["concurrency_basis"], rec["tpot_ms"].mean
(1024.0, 4.0, 'stated', 8.0)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from placement.core.instance.errors import InputError
from placement.measure.points import Stats

__all__ = ["FORMATS", "detect_format", "read_sglang", "read_vllm"]


def _need(doc: dict, key: str, path: str, where: str = "") -> Any:
    """``doc[key]``, or an input error naming the file and the field."""
    if not isinstance(doc, dict) or key not in doc or doc[key] is None:
        raise InputError(f"the result has no {key!r}; a complete {where or 'result'} states it",
                         file=path, field=key)
    return doc[key]


def _number(doc: dict, key: str, path: str, *, positive: bool = True, where: str = "") -> float:
    v = _need(doc, key, path, where)
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or (positive and v <= 0):
        raise InputError(f"expected a {'positive ' if positive else ''}finite number, got {v!r}", file=path, field=key)
    return float(v)


def _optional(doc: dict, key: str) -> float | None:
    v = doc.get(key)
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0 else None


def _stats_ms(doc: dict, metric: str, suffix: str = "_ms", to_ms: float = 1.0) -> Stats:
    """``mean_<metric><suffix>``, ``median_…``, ``p90_…``, ``p99_…`` in ms (vLLM/SGLang: ``_ms``; InferenceX:
    no suffix, seconds, ``to_ms`` 1e3)."""
    value = {k: _optional(doc, f"{s}_{metric}{suffix}") for k, s in
             (("mean", "mean"), ("p50", "median"), ("p90", "p90"), ("p99", "p99"))}
    return Stats(**{k: None if v is None else v * to_ms for k, v in value.items()})


def _infinite_rate(rate: Any) -> bool:
    """Whether a recorded request rate means "all at once" (vLLM writes ``inf``; some versions the string)."""
    return rate is None or (isinstance(rate, int | float) and math.isinf(rate)) or str(rate).lower() in ("inf", "infinity")


#: ``--metadata`` keys (vLLM) and their meaning.
_METADATA = {"tensor_parallel_size": "tp", "tp": "tp", "tp_size": "tp", "pipeline_parallel_size": "pp",
             "data_parallel_size": "dp", "dp": "dp", "expert_parallel_size": "ep", "ep": "ep"}


def _serve_record(doc: dict, path: str, fmt: str, index: int) -> dict:
    """One vLLM- or SGLang-style run (the two share their field names and definitions)."""
    where = f"{fmt} benchmark result"
    done = _number(doc, "completed", path, where=where)
    rec: dict[str, Any] = {"record": index, "model_id": str(doc.get("model_id") or doc.get("model") or ""),
                           "prompt_tokens": _number(doc, "total_input_tokens", path, where=where) / done,
                           "output_tokens": _number(doc, "total_output_tokens", path, where=where) / done,
                           "request_rate_rps": (_optional(doc, "request_throughput")
                                                or done / _number(doc, "duration", path, where=where)),
                           "output_tokens_per_s": _optional(doc, "output_throughput"),
                           "ttft_ms": _stats_ms(doc, "ttft"), "tpot_ms": _stats_ms(doc, "tpot"),
                           "itl_ms": _stats_ms(doc, "itl"), "notes": []}
    for metric in ("ttft", "tpot"):
        if rec[f"{metric}_ms"].central is None:
            raise InputError(f"the result has neither mean_{metric}_ms nor median_{metric}_ms", file=path,
                             field=f"mean_{metric}_ms")
    limit = doc.get("max_concurrency")
    if isinstance(limit, int | float) and limit > 0 and _infinite_rate(doc.get("request_rate")):
        rec["concurrency"], rec["concurrency_basis"] = float(limit), "stated"
        rec["notes"].append(f"concurrency: the client's max_concurrency {limit:g} (all requests sent at once)")
    else:
        latency_ms = (_optional(doc, "mean_e2e_latency_ms") or _optional(doc, "mean_e2el_ms")
                      or _optional(doc, "mean_latency_ms"))
        if latency_ms is None:
            latency_ms = rec["ttft_ms"].central + rec["tpot_ms"].central * max(rec["output_tokens"] - 1, 0)
            how = "mean TTFT + mean TPOT × (mean output − 1)"
        else:
            how = "the mean request latency"
        rec["concurrency"] = rec["request_rate_rps"] * latency_ms / 1e3
        rec["concurrency_basis"] = "little"
        rec["notes"].append(f"concurrency: Little's law, {rec['request_rate_rps']:.4g} req/s × {how} "
                            f"({latency_ms:.4g} ms) at request rate {doc.get('request_rate')!r}")
    rec["notes"].append(f"TPOT: {fmt}'s mean_tpot_ms, per request (latency − TTFT)/(output − 1), ms; "
                        "ITL: the chunk gaps pooled over requests")
    for key, field in _METADATA.items():
        v = doc.get(key)
        if isinstance(v, int | str) and str(v).isdigit() and int(v) >= 1:
            rec[field] = int(v)
    return rec


def _model_from_server_info(run: dict) -> str:
    info = run.get("server_info") if isinstance(run.get("server_info"), dict) else {}
    return str(run.get("model_id") or info.get("model_path") or info.get("served_model_name") or "")


def read_vllm(doc: Any, path: str) -> list[dict]:
    """The run of a ``vllm bench serve --save-result`` file (module docstring)."""
    if not isinstance(doc, dict):
        raise InputError("expected one JSON object (vllm bench serve --save-result)", file=path)
    return [_serve_record(doc, path, "vllm", 0)]  # the framework is not stated: vLLM's client drives any server


def read_sglang(doc: Any, path: str) -> list[dict]:
    """Every run of an ``sglang.bench_serving`` JSON Lines file (one object per line); ``server_info``
    (SGLang 0.5+) states the server's tp/dp/ep, version and model path."""
    runs = doc if isinstance(doc, list) else [doc]
    out = []
    for i, run in enumerate(runs):
        if not isinstance(run, dict):
            raise InputError(f"line {i + 1}: expected a JSON object (sglang.bench_serving --output-file)", file=path)
        rec = _serve_record(run, f"{path} (line {i + 1})", "sglang", i)
        rec["model_id"] = _model_from_server_info(run)
        if rec["concurrency_basis"] == "little" and (c := _optional(run, "concurrency")) is not None:
            rec["concurrency"] = c
            rec["notes"][0] = "concurrency: SGLang's measured mean in flight (Σ request latencies ÷ duration)"
        info = run.get("server_info")
        if isinstance(info, dict):
            for key, field in (("tp_size", "tp"), ("pp_size", "pp"), ("dp_size", "dp"), ("ep_size", "ep")):
                if isinstance(info.get(key), int) and info[key] >= 1:
                    rec[field] = info[key]
            rec["framework"] = "sglang"
            rec["notes"].append(f"framework: sglang {info.get('version', '')} (server_info)".replace("  ", " "))
        out.append(rec)
    return out


#: A metric's unit → factor to milliseconds (aiperf and genai-perf state the unit of every record).
_TO_MS = {"ms": 1.0, "s": 1e3, "sec": 1e3, "us": 1e-3, "ns": 1e-6}


def _metric(records: dict, names: tuple[str, ...]) -> dict | None:
    return next((records[n] for n in names if isinstance(records.get(n), dict)), None)


def _stats_of(rec: dict | None, path: str, name: str, to: dict[str, float] | None = None) -> Stats | None:
    """A metric record's avg/p50/p90/p99 in ms (``to``: unit factors; None: any unit is taken as is)."""
    if rec is None:
        return None
    f = 1.0
    if to is not None:
        unit = str(rec.get("unit", "")).lower()
        if unit not in to:
            raise InputError(f"unit {rec.get('unit')!r} of {name}; expected one of {', '.join(to)}", file=path,
                             field=f"{name}.unit")
        f = to[unit]
    val = {k: (float(rec[k]) * f if isinstance(rec.get(k), int | float) and rec[k] > 0 else None)
           for k in ("avg", "p50", "p90", "p99")}
    return Stats(mean=val["avg"], p50=val["p50"], p90=val["p90"], p99=val["p99"])


def _find(node: Any, key: str, skip: tuple[str, ...] = ("warmup",)) -> Any:
    """The first value of ``key`` in a nested config (depth first, phases named in ``skip`` left out)."""
    if isinstance(node, dict):
        if node.get("name") in skip or node.get("exclude_from_results") is True:
            return None
        if key in node and node[key] is not None and not isinstance(node[key], dict | list):
            return node[key]
        children = node.values()
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        if (v := _find(child, key, skip)) is not None:
            return v
    return None


def _model_names(cfg: dict) -> str:
    for key in ("model_names", "model"):
        v = _find(cfg, key)
        if v is not None:
            return str(v)
        for node in (cfg, cfg.get("endpoint") if isinstance(cfg.get("endpoint"), dict) else {}):
            if isinstance(node.get(key), list) and node[key]:
                return str(node[key][0])
    items = (cfg.get("models") or {}).get("items") if isinstance(cfg.get("models"), dict) else None
    tokenizer = (cfg.get("tokenizer") or {}).get("name") if isinstance(cfg.get("tokenizer"), dict) else None
    if tokenizer:  # the served name may be an alias; the tokenizer names the checkpoint
        return str(tokenizer)
    return str(items[0].get("name", "")) if items else ""


def _profile_record(records: dict, cfg: dict, path: str, fmt: str) -> dict:
    """One aiperf / genai-perf run from its metric records and its input config."""
    ttft = _stats_of(_metric(records, ("time_to_first_token", "ttft")), path, "time_to_first_token", _TO_MS)
    tpot = _stats_of(_metric(records, ("inter_token_latency",)), path, "inter_token_latency", _TO_MS)
    for name, st in (("time_to_first_token", ttft), ("inter_token_latency", tpot)):
        if st is None or st.central is None:
            raise InputError(f"the export has no {name} (a streamed run states it)", file=path, field=name)
    isl = _metric(records, ("input_sequence_length",))
    osl = _metric(records, ("output_sequence_length",))
    rps = _metric(records, ("request_throughput",))
    for name, r in (("input_sequence_length", isl), ("output_sequence_length", osl), ("request_throughput", rps)):
        if r is None or not isinstance(r.get("avg"), int | float) or r["avg"] <= 0:
            raise InputError(f"the export has no {name}.avg", file=path, field=name)
    out_tps = _metric(records, ("output_token_throughput",))
    rec: dict[str, Any] = {
        "record": 0, "model_id": _model_names(cfg), "prompt_tokens": float(isl["avg"]),
        "output_tokens": float(osl["avg"]), "request_rate_rps": float(rps["avg"]),
        "output_tokens_per_s": float(out_tps["avg"]) if out_tps and out_tps.get("avg") else None,
        "ttft_ms": ttft, "tpot_ms": tpot,
        "itl_ms": _stats_of(_metric(records, ("inter_chunk_latency",)), path, "inter_chunk_latency", _TO_MS),
        "notes": [(f"TPOT: {fmt}'s inter_token_latency, per request (latency − TTFT)/(output − 1); ITL: its "
                  "inter_chunk_latency")]}
    rate = _find(cfg, "request_rate")
    conc = _find(cfg, "concurrency")
    if isinstance(conc, int | float) and conc > 0 and not (isinstance(rate, int | float) and rate > 0):
        rec["concurrency"], rec["concurrency_basis"] = float(conc), "stated"
        rec["notes"].append(f"concurrency: the client's concurrency {conc:g} (input_config)")
    else:
        lat = _stats_of(_metric(records, ("request_latency",)), path, "request_latency", _TO_MS)
        if lat is None or lat.mean is None:
            raise InputError("the export states neither a concurrency nor request_latency.avg (for Little's law)",
                             file=path, field="input_config.concurrency")
        rec["concurrency"], rec["concurrency_basis"] = rec["request_rate_rps"] * lat.mean / 1e3, "little"
        rec["notes"].append(f"concurrency: Little's law, request_throughput × mean request_latency at request "
                            f"rate {rate!r}")
    return rec


def read_aiperf(doc: Any, path: str) -> list[dict]:
    """An aiperf ``profile_export_aiperf.json`` (metric records at the top level, or under ``records`` in
    aiperf ≤ 0.2), or its per-request ``profile_export.jsonl`` (:func:`read_aiperf_requests`)."""
    if isinstance(doc, list):
        return read_aiperf_requests(doc, path)
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object (profile_export_aiperf.json)", file=path)
    records = doc["records"] if isinstance(doc.get("records"), dict) else doc
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    rec = _profile_record(records, cfg, path, "aiperf")
    if doc.get("aiperf_version"):
        rec["notes"].append(f"client: aiperf {doc['aiperf_version']}")
    return [rec]


def _quantiles(values: list[float]) -> Stats | None:
    v = np.asarray([x for x in values if x > 0], dtype=float)
    if not v.size:
        return None
    return Stats(mean=float(v.mean()), p50=float(np.percentile(v, 50)), p90=float(np.percentile(v, 90)),
                 p99=float(np.percentile(v, 99)))


def read_aiperf_requests(lines: list, path: str) -> list[dict]:
    """aiperf's per-request ``profile_export.jsonl``: the run's statistics from its successful requests of
    the profiling phase; request rate = requests ÷ (last response − first request), concurrency by Little's
    law (Σ request latencies ÷ that span)."""
    ok = []
    for i, line in enumerate(lines):
        if not isinstance(line, dict) or not isinstance(line.get("metrics"), dict):
            raise InputError(f"line {i + 1}: expected an aiperf record (metadata, metrics)", file=path)
        if line.get("error") or (line.get("metadata") or {}).get("credit_phase", "profiling") != "profiling":
            continue
        ok.append(line["metrics"])
    if not ok:
        raise InputError("no successful request of the profiling phase", file=path, field="metrics")

    def values(names: tuple[str, ...], to_ms: bool) -> list[float]:
        out = []
        for m in ok:
            rec = _metric(m, names)
            if rec is None or not isinstance(rec.get("value"), int | float):
                continue
            unit = str(rec.get("unit", "")).lower()
            if to_ms and unit not in _TO_MS:
                raise InputError(f"unit {rec.get('unit')!r} of {names[0]}", file=path, field=f"{names[0]}.unit")
            out.append(float(rec["value"]) * (_TO_MS[unit] if to_ms else 1.0))
        return out

    ttft, tpot = _quantiles(values(("time_to_first_token", "ttft"), True)), _quantiles(
        values(("inter_token_latency",), True))
    lat = values(("request_latency",), True)
    starts = values(("min_request_timestamp",), False)
    for name, got in (("time_to_first_token", ttft), ("inter_token_latency", tpot), ("request_latency", lat or None),
                      ("min_request_timestamp", starts or None)):
        if got is None:
            raise InputError(f"no request states {name}", file=path, field=f"metrics.{name}")
    ends = [s + latency * 1e6 for s, latency in zip(starts, lat, strict=False)]
    span_s = (max(ends) - min(starts)) / 1e9
    isl, osl = values(("input_sequence_length",), False), values(("output_sequence_length",), False)
    if not isl or not osl or span_s <= 0:
        raise InputError("the requests state no input/output lengths or timestamps", file=path,
                         field="metrics.input_sequence_length")
    n = len(ok)
    return [{"record": 0, "model_id": "", "prompt_tokens": float(np.mean(isl)), "output_tokens": float(np.mean(osl)),
             "request_rate_rps": n / span_s, "output_tokens_per_s": float(np.sum(osl)) / span_s,
             "ttft_ms": ttft, "tpot_ms": tpot, "concurrency": float(np.sum(lat)) / 1e3 / span_s,
             "concurrency_basis": "little",
             "notes": [f"{n} successful requests of {len(lines)}; statistics over them", ("TPOT: aiperf's "
                       "per-request inter_token_latency"), ("concurrency: Little's law, Σ request latencies ÷ the run's "
                       f"span ({span_s:.4g} s)")]}]


def read_genai_perf(doc: Any, path: str) -> list[dict]:
    """A genai-perf ``profile_export_genai_perf.json`` (the same metric records as aiperf's; ``input_config``
    flat in older versions, nested under ``perf_analyzer.stimulus`` in newer)."""
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object (profile_export_genai_perf.json)", file=path)
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    # input_config.backend is the client's request format, not the server: the framework is not stated
    return [_profile_record(doc, cfg, path, "genai-perf")]


#: InferenceX ``framework`` → this project's; disaggregated frameworks are refused (see :func:`read_inferencex`).
_INFERENCEX_FRAMEWORKS = {"vllm": "vllm", "sglang": "sglang", "trt": "trtllm", "trtllm": "trtllm", "atom": "atom"}
#: InferenceX draws each request's lengths uniformly in [0.8 L, 1] × L (``--random-range-ratio 0.8``): mean 0.9 L.
INFERENCEX_MEAN_LENGTH_SHARE = 0.9
_LENGTH_TAG = re.compile(r"_(\d+)k(\d+)k(?=[_.]|$)")


def read_inferencex(doc: Any, path: str) -> list[dict]:
    """InferenceX ``agg_*.json``: one object per configuration, or a list of them (``collect_results.py``).

    Stated: hardware (``hw``, normalised as the InferenceX app does: the part before the first ``-``),
    framework, precision, tp/pp/ep, attention DP, concurrency (the client's, request rate ∞); seconds →
    ms; lengths ``isl``/``osl`` (or the file name's ``1k1k`` tag in 2025 files) are nominal, the requests'
    mean is 0.9 × them. Speculative decoding (``spec_decoding``/``mtp``) and prefill/decode
    disaggregation are recorded in notes: a calibration of aggregated serving skips them.
    """
    objs = doc if isinstance(doc, list) else [doc]
    out = []
    for i, d in enumerate(objs):
        where = f"{path} (entry {i})" if isinstance(doc, list) else path
        if not isinstance(d, dict):
            raise InputError("expected an InferenceX agg object", file=where)
        hw = str(_need(d, "hw", where, "InferenceX agg")).lower().split(":")[-1].split("-")[0]
        framework = str(_need(d, "framework", where, "InferenceX agg"))
        disagg = bool(d.get("disagg")) or bool(d.get("is_multinode")) or framework.startswith(("dynamo", "mori"))
        if disagg:
            raise InputError(f"a disaggregated (prefill/decode) run ({framework}); only aggregated serving is "
                             "calibrated", file=where, field="framework")
        isl, osl = d.get("isl"), d.get("osl")
        notes = []
        if not (isinstance(isl, int) and isinstance(osl, int)):
            tag = _LENGTH_TAG.search(Path(path).name)
            if tag is None:
                raise InputError("no isl/osl in the file and no 1k1k-style tag in its name", file=where, field="isl")
            isl, osl = int(tag.group(1)) * 1024, int(tag.group(2)) * 1024
            notes.append(f"lengths: isl {isl}, osl {osl} from the file name's tag {tag.group(0).strip('_')!r}")
        share = INFERENCEX_MEAN_LENGTH_SHARE
        tp, pp = int(_number(d, "tp", where)), int(d.get("pp") or 1)
        chips = tp * pp * int(d.get("pcp_size") or 1)
        conc = _number(d, "conc", where)
        ttft, tpot, itl = (_stats_ms(d, metric, "", 1e3) for metric in ("ttft", "tpot", "itl"))
        if tpot.central is None or ttft.central is None:
            raise InputError("no mean_tpot/median_tpot or mean_ttft/median_ttft", file=where, field="mean_tpot")
        e2el = _optional(d, "mean_e2el")
        spec = d.get("spec_decoding") if d.get("spec_decoding") not in (None, "none") else (
            "mtp" if d.get("mtp") == "on" else None)
        rec = {"record": i, "chip": hw, "chips": chips, "model_id": str(_need(d, "model", where)),
               "framework": _INFERENCEX_FRAMEWORKS.get(framework, framework), "tp": tp, "pp": pp,
               "ep": int(d.get("ep") or 1), "dp": tp if str(d.get("dp_attention")).lower() == "true" else 1,
               "prompt_tokens": isl * share, "output_tokens": osl * share, "concurrency": conc,
               "concurrency_basis": "stated",
               "request_rate_rps": conc / e2el if e2el else None,
               "output_tokens_per_s": (float(d["output_tput_per_gpu"]) * chips if _optional(d, "output_tput_per_gpu")
                                       else None),
               "ttft_ms": ttft, "tpot_ms": tpot, "itl_ms": itl, "speculative": spec,
               "notes": [*notes, ("seconds → ms; throughput per GPU × tp·pp·pcp GPUs; TPOT per request "
                         "(latency − TTFT)/(output − 1)"), (f"lengths: the mean of requests drawn in [0.8, 1] × "
                         f"{isl}/{osl}"), f"hardware: {d['hw']!r} → {hw}"]}
        if str(d.get("precision", "")).lower():
            rec["precision"] = str(d["precision"]).lower()
        if rec["dp"] > 1:
            rec["tp"] = 1  # DP attention: the recorded tp is the world size, attention runs tp·1 per rank
            rec["notes"].append(f"dp_attention: {tp} attention ranks of tp 1, experts over ep {rec['ep']}")
        out.append(rec)
    return out


#: Format name -> reader; :func:`detect_format` picks one from a document's keys.
FORMATS: dict[str, Callable[[Any, str], list[dict]]] = {
    "vllm": read_vllm, "sglang": read_sglang, "aiperf": read_aiperf, "genai-perf": read_genai_perf,
    "inferencex": read_inferencex}


def detect_format(doc: Any, path: str, jsonl: bool) -> str:
    """The format of a parsed result file, from its keys (``jsonl``: it was JSON Lines).

    Raises
    ------
    InputError
        When no reader recognises it, naming the formats known.
    """
    first = doc[0] if isinstance(doc, list) and doc else doc
    if isinstance(first, dict):
        if "hw" in first and ("tput_per_gpu" in first or "conc" in first):
            return "inferencex"
        if "metadata" in first and "metrics" in first:
            return "aiperf"
        if "mean_ttft_ms" in first or "median_ttft_ms" in first:
            return "sglang" if jsonl or "mean_e2e_latency_ms" in first else "vllm"
        if "aiperf_version" in first or isinstance(first.get("records"), dict):
            return "aiperf"
        if isinstance(first.get("time_to_first_token"), dict):
            return "aiperf" if "schema_version" in first else "genai-perf"
    raise InputError("not a result file this importer knows; expected one of: " + ", ".join(FORMATS)
                     + " (give --format to say which)", file=path)
