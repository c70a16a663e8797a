"""Build ``throughput_at_scale.csv`` from the stored public serving measurements.

Deterministic: the same inputs give the same file, byte for byte (rows sorted,
floats printed with ``repr``). Values are copied as published; the only
changes are unit conversions (seconds → milliseconds, per node → per GPU),
each stated in the row's ``metric_notes``.

Inputs
------
* ``raw/trtllm-perf-overview-*/perf-overview-tables.md`` — verbatim table
  excerpts of the TensorRT-LLM perf overview (committed).
* ``raw/lmsys-blogs/points.csv`` — figures copied by hand from the LMSYS blog
  posts (committed).
* ``--inferencex DIR`` — the InferenceX dashboard's API captures
  (``benchmarks*.json``, see ``raw/README.md`` for where they come from and
  their sha256); not committed. Without it the InferenceX rows already in the
  output CSV are kept unchanged.

Examples
--------
``python benchmarks/data/import_scale_data.py --inferencex /tmp/ix``
"""

from __future__ import annotations

import argparse
import csv
import functools
import json
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
OUT_PATH = HERE / "throughput_at_scale.csv"
RAW = HERE / "raw"
RETRIEVED = "2026-12-03"

COLUMNS = [
    "campaign", "publisher", "source_url", "date", "retrieved", "run_id",
    "chip", "chip_published", "chip_catalogued", "gpus",
    "model", "model_published", "model_catalogued", "precision", "framework", "framework_version",
    "isl", "osl", "load_kind", "concurrency", "request_rate_per_s",
    "tp", "pp", "ep", "dp_attention", "disaggregated", "prefill_gpus", "decode_gpus", "spec_decode",
    "output_tok_s_per_gpu", "total_tok_s_per_gpu", "input_tok_s_per_gpu",
    "output_tok_s_total", "total_tok_s_total", "requests_per_s", "tok_s_per_user",
    "ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99",
    "tpot_ms_mean", "tpot_ms_median", "tpot_ms_p99",
    "itl_ms_mean", "itl_ms_median", "itl_ms_p99",
    "e2el_ms_mean", "e2el_ms_median", "e2el_ms_p99",
    "overlaps_measured_aggregated", "metric_notes",
]

#: Published chip name → catalogue-style name (catalogue name where one exists, else the vendor's).
CHIPS = {
    "h100": "h100", "h200": "h200", "b200": "b200", "b300": "b300", "gb200": "gb200", "gb300": "gb300",
    "mi300x": "mi300x", "mi325x": "mi325x", "mi355x": "mi355x",
    "H100": "h100", "H200": "h200", "B200": "b200", "GB200": "gb200",
    "H100 80GB HBM3": "h100", "H200 141GB HBM3": "h200", "H200 131GB HBM3": "h200",
    "GH200 480GB": "gh200", "L40S": "l40s", "A100-SXM4-80GB": "a100-80gb",
    "RTX 6000 Pro Blackwell Server Edition": "rtx-pro-6000-blackwell",
}

#: Published model name → name looked up in the catalogue (HF style; same architecture).
MODEL_LOOKUP = {
    "dsr1": "deepseek-ai/DeepSeek-R1",
    "deepseek-ai/DeepSeek-R1-0528": "deepseek-ai/DeepSeek-R1",
    "nvidia/DeepSeek-R1-0528-NVFP4-v2": "deepseek-ai/DeepSeek-R1",
    "DeepSeek-V3/R1": "deepseek-ai/DeepSeek-R1",
    "LLaMA v3.1 8B": "meta-llama/Llama-3.1-8B",
    "LLaMA 3.1 8B": "meta-llama/Llama-3.1-8B",
    "LLaMA v3.1 70B": "meta-llama/Llama-3.1-70B",
    "LLaMA 3.1 70B": "meta-llama/Llama-3.1-70B",
    "LLaMA v3.1 405B": "meta-llama/Llama-3.1-405B",
    "Llama 3.1 8B": "meta-llama/Llama-3.1-8B",
    "GPT-OSS 120B": "openai/gpt-oss-120b",
    "GPT-OSS 20B": "openai/gpt-oss-20b",
}

#: TensorRT-LLM tables: table title → checkpoint named in the page's model lists, per precision.
TRT_CHECKPOINTS = {
    "v1.0": {
        ("Llama 3.3 70B", "FP4"): "nvidia/Llama-3.3-70B-Instruct-FP4",
        ("Llama 3.3 70B", "FP8"): "nvidia/Llama-3.3-70B-Instruct-FP8",
        ("Llama 3.1 405B", "FP4"): "nvidia/Llama-3.1-405B-Instruct-FP4",
        ("Llama 3.1 405B", "FP8"): "nvidia/Llama-3.1-405B-Instruct-FP8",
        ("Qwen3-235B-A22B", "FP4"): "nvidia/Qwen3-235B-A22B-FP4",
        ("Qwen3-235B-A22B", "FP8"): "nvidia/Qwen3-235B-A22B-FP8",
        ("Qwen3-30B-A3B", "FP4"): "nvidia/Qwen3-30B-A3B-FP4",
        ("Llama 4 Maverick", "FP8"): "nvidia/Llama-4-Maverick-17B-128E-Instruct-FP8",
        ("Llama 3.1 8B", "FP8"): "nvidia/Llama-3.1-8B-Instruct-FP8",
    },
    "devguide": {
        ("Deepseek R1 0528", "FP4"): "nvidia/DeepSeek-R1-0528-NVFP4-v2",
        ("Deepseek R1 0528", "FP8"): "deepseek-ai/DeepSeek-R1-0528",
        ("Qwen3 235B A22B", "FP4"): "nvidia/Qwen3-235B-A22B-FP4",
        ("Qwen3 235B A22B", "FP8"): "nvidia/Qwen3-235B-A22B-FP8",
        ("Qwen3 30B A3B", "FP4"): "nvidia/Qwen3-30B-A3B-FP4",
        ("LLaMA v3.3 70B", "FP4"): "nvidia/Llama-3.3-70B-Instruct-FP4",
        ("LLaMA v3.3 70B", "FP8"): "nvidia/Llama-3.3-70B-Instruct-FP8",
        ("LLaMA v4 Maverick", "FP4"): "nvidia/Llama-4-Maverick-17B-128E-Instruct-NVFP4",
        ("LLaMA v4 Maverick", "FP8"): "nvidia/Llama-4-Maverick-17B-128E-Instruct-FP8",
    },
}

TRT_CAMPAIGNS = {
    # excerpt: (campaign, commit of the page, path, date, framework version, notes)
    "v0.17": ("trtllm-perf-overview-v0.17", "258c7540c03517def55d9a5aadfa9288af474e1b",
              "docs/source/performance/perf-overview.md", "2025-02", "0.17",
              ("trtllm-bench throughput, offline: all requests queued at once (no concurrency limit); "
               "output_tok_s_total = the TP group's output tokens/s ('token throughput in tokens/second'; "
               "the page's example equals request/s x OSL); date = v0.17 release month (result date not "
               "published)")),
    "v1.0": ("trtllm-perf-overview-v1.0", "00f37686aa854010d68bcbd0f4ab000221541ca6",
             "docs/source/performance/perf-overview.md", "2025-09", "1.0",
             ("trtllm-bench throughput, offline: requests at an infinite rate; output_tok_s_total = "
              "'Total Output Throughput (tokens/sec)' of the whole TPxPP group; date = v1.0 release month "
              "(result date not published)")),
    "devguide": ("trtllm-perf-overview-devguide", "03e27c7d5ff0c6e89f8328838c0a8e64f1b34f9d",
                 "docs/source/developer-guide/perf-overview.md", "2025", "",
                 ("trtllm-bench throughput, offline: requests at a high rate; output_tok_s_per_gpu = "
                  "'Per GPU Output Throughput (tps/gpu)' (first and later generated tokens, input excluded); "
                  "DEPn = attention DP + EP over n GPUs; version and result date not stated on the page: the year is "
                  "read from its contents (the DeepSeek-R1-0528 NVFP4-v2 checkpoint, the renamed Model-Optimizer "
                  "link)")),
}


class ScaleDataError(Exception):
    """Raised with a message naming the file and what was expected."""


def _catalogue_names(path: Path, key: str) -> set[str]:
    with open(path) as f:
        return {entry["name"] for entry in yaml.safe_load(f)[key]}


@functools.cache
def _catalogue_model(published: str) -> str | None:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from costmodels.measured_rows import catalogue_model_name

    return catalogue_model_name(MODEL_LOOKUP.get(published, published))


def _num(text: str) -> str:
    """A published table number without thousands separators ('' stays '')."""
    return text.replace(",", "").strip()


def _ms(seconds: float | None) -> str:
    return "" if seconds is None else repr(round(seconds * 1000.0, 6))


def _f(value: float | None) -> str:
    return "" if value is None else repr(round(float(value), 6))


def _row(**fields: object) -> dict[str, str]:
    unknown = set(fields) - set(COLUMNS)
    if unknown:
        raise ScaleDataError(f"internal: unknown columns {sorted(unknown)}")
    out = {c: "" for c in COLUMNS}
    out.update({k: "" if v is None else str(v) for k, v in fields.items()})
    out["retrieved"] = RETRIEVED
    return out


# ---- InferenceX -------------------------------------------------------------------------------

IX_NOTES_AGG = (
    "InferenceX benchmark_serving at fixed client concurrency (random prompts; lengths drawn in [0.8, 1] x "
    "ISL/OSL in the current workflow configs); per-GPU = "
    "token/s divided by tp (harness: num_gpus = tp*pp*pcp); tok_s_per_user = median_intvty = "
    "1/median TPOT; TPOT = (e2el - ttft)/(output tokens - 1) per request, ITL = gap between streamed "
    "chunks (a chunk can hold several tokens with MTP or a stream interval); seconds converted to ms"
)
IX_NOTES_DISAGG = (
    "InferenceX multinode prefill/decode disaggregation at fixed client concurrency; total_tok_s_per_gpu "
    "= all tokens / (prefill + decode GPUs), output_tok_s_per_gpu = output tokens / decode GPUs only, "
    "input_tok_s_per_gpu = input tokens / prefill GPUs only; tp/ep/dp_attention are the decode workers'; "
    "tok_s_per_user = 1/median TPOT; seconds converted to ms"
)
IX_NOTES_V1_DISAGG = (
    "InferenceX disaggregated run recorded in the v1 artifact schema: the prefill/decode split is not "
    "recorded; gpus = the published tp, which the harness of that date used as the total GPU count "
    "(total_tok_s_per_gpu = all tokens / tp); output_tok_s_per_gpu and input_tok_s_per_gpu are per "
    "decode and per prefill GPU; seconds converted to ms"
)


#: InferenceX model key → the checkpoint family its dashboard names.
IX_MODELS = {"dsr1": "deepseek-ai/DeepSeek-R1-0528"}


def _ix_key(r: dict) -> tuple:
    return tuple(str(r.get(k)) for k in (
        "hardware", "framework", "model", "precision", "spec_method", "disagg", "isl", "osl", "conc",
        "prefill_tp", "prefill_ep", "prefill_dp_attention", "prefill_num_workers", "decode_tp", "decode_ep",
        "decode_dp_attention", "decode_num_workers", "num_prefill_gpu", "num_decode_gpu", "date", "run_url"))


def load_inferencex(directory: Path) -> list[dict]:
    """Union of every ``benchmarks*.json`` capture in ``directory`` (one record per measurement)."""
    files = sorted(directory.glob("*.json"))
    if not files:
        raise ScaleDataError(f"{directory}: no InferenceX capture (*.json) found")
    best: dict[tuple, dict] = {}
    for path in files:
        try:
            records = json.loads(path.read_text())
        except json.JSONDecodeError as exc:
            raise ScaleDataError(f"{path}: not JSON ({exc})") from exc
        if not isinstance(records, list) or not all(isinstance(r, dict) and "metrics" in r for r in records):
            raise ScaleDataError(f"{path}: expected a list of benchmark records with 'metrics'")
        for r in records:
            if r.get("model") not in IX_MODELS or r.get("hardware") not in CHIPS:
                raise ScaleDataError(f"{path}: record model {r.get('model')!r} / hardware {r.get('hardware')!r} "
                                     f"not known (expected models {sorted(IX_MODELS)})")
            k = _ix_key(r)
            if k not in best or len(r["metrics"]) > len(best[k]["metrics"]):
                best[k] = r
    return [best[k] for k in sorted(best)]


def _ix_row(r: dict, chips: set[str], models: set[str]) -> dict[str, str]:
    m = r["metrics"]
    workers = (r["prefill_num_workers"] or 0) > 0 or (r["decode_num_workers"] or 0) > 0
    if not r["disagg"]:
        gpus, prefill, decode, layout, notes = r["decode_tp"], "", "", "no", IX_NOTES_AGG
    elif workers:
        prefill, decode = r["num_prefill_gpu"], r["num_decode_gpu"]
        gpus, notes = prefill + decode, IX_NOTES_DISAGG
        layout = (f"prefill {r['prefill_num_workers']} x tp{r['prefill_tp']} ep{r['prefill_ep']}"
                  f"{' dpa' if r['prefill_dp_attention'] else ''} = {prefill} GPUs; "
                  f"decode {r['decode_num_workers']} x tp{r['decode_tp']} ep{r['decode_ep']}"
                  f"{' dpa' if r['decode_dp_attention'] else ''} = {decode} GPUs")
    else:
        gpus, prefill, decode, notes = r["decode_tp"], "", "", IX_NOTES_V1_DISAGG
        layout = "yes (prefill/decode split not recorded)"
    run = re.search(r"/runs/(\d+)/attempts/(\d+)", r.get("run_url") or "")
    chip, published = CHIPS[r["hardware"]], IX_MODELS[r["model"]]
    model = _catalogue_model(published) or published
    return _row(
        campaign=f"inferencex-{r['date'][:7]}", publisher="semianalysis-inferencex", source_url=r["run_url"],
        date=r["date"], run_id=f"{run.group(1)}/{run.group(2)}" if run else "",
        chip=chip, chip_published=r["hardware"], chip_catalogued="yes" if chip in chips else "no", gpus=gpus,
        model=model, model_published=published,
        model_catalogued="yes" if model in models else "no", precision=r["precision"],
        framework=r["framework"], framework_version=r.get("image") or "", isl=r["isl"], osl=r["osl"],
        load_kind="concurrency", concurrency=r["conc"], tp=r["decode_tp"], pp=1, ep=r["decode_ep"],
        dp_attention="yes" if r["decode_dp_attention"] else "no", disaggregated=layout,
        prefill_gpus=prefill, decode_gpus=decode,
        spec_decode="" if r["spec_method"] == "none" else f"{r['spec_method']} (draft length not published)",
        output_tok_s_per_gpu=_f(m.get("output_tput_per_gpu")), total_tok_s_per_gpu=_f(m.get("tput_per_gpu")),
        input_tok_s_per_gpu=_f(m.get("input_tput_per_gpu")), tok_s_per_user=_f(m.get("median_intvty")),
        ttft_ms_mean=_ms(m.get("mean_ttft")), ttft_ms_median=_ms(m.get("median_ttft")),
        ttft_ms_p99=_ms(m.get("p99_ttft")), tpot_ms_mean=_ms(m.get("mean_tpot")),
        tpot_ms_median=_ms(m.get("median_tpot")), tpot_ms_p99=_ms(m.get("p99_tpot")),
        itl_ms_mean=_ms(m.get("mean_itl")), itl_ms_median=_ms(m.get("median_itl")),
        itl_ms_p99=_ms(m.get("p99_itl")), e2el_ms_mean=_ms(m.get("mean_e2el")),
        e2el_ms_median=_ms(m.get("median_e2el")), e2el_ms_p99=_ms(m.get("p99_e2el")), metric_notes=notes,
    )


# ---- TensorRT-LLM perf overview tables ---------------------------------------------------------

_HEADER = re.compile(r"^(?:\*\*(\d+) GPUs\*\*|([A-Z0-9]+))<br/>((?:D?EP|TP)\d+(?:,PP\d+)?) \((FP\d+)\)$")


def _tables(path: Path) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header cells, body rows) of every markdown table under a heading."""
    out, title, rows = [], "", []
    prefix = ""
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            title, prefix = line.lstrip("#").strip(), ""
        elif line.startswith("RTX 6000 Pro"):
            prefix = "RTX 6000 Pro Blackwell Server Edition"
        elif line.startswith("|"):
            body = line.strip()
            cells = [c.strip() for c in body[1:-1 if body.endswith("|") else None].split("|")]
            if set("".join(cells)) <= set("-: "):
                continue
            if not rows:
                rows = [cells]
            else:
                rows.append(cells)
            continue
        if rows:
            out.append((f"{title}|{prefix}", rows[0], rows[1:]))
            rows = []
    if rows:
        out.append((f"{title}|{prefix}", rows[0], rows[1:]))
    return out


def _layout(spec: str) -> dict[str, object]:
    tp = int(re.search(r"(?:D?EP|TP)(\d+)", spec).group(1))
    pp_match = re.search(r"PP(\d+)", spec)
    pp = int(pp_match.group(1)) if pp_match else 1
    dep = spec.startswith("DEP")
    return {"tp": tp, "pp": pp, "ep": tp if dep else "", "dp_attention": "yes" if dep else "no", "gpus": tp * pp}


def trtllm_rows(version: str, chips: set[str], models: set[str]) -> list[dict[str, str]]:
    """Rows of one stored TensorRT-LLM perf-overview excerpt."""
    campaign, commit, page, date, fw_version, notes = TRT_CAMPAIGNS[version]
    path = RAW / campaign / "perf-overview-tables.md"
    url = f"https://github.com/NVIDIA/TensorRT-LLM/blob/{commit}/{page}"
    if version == "v0.17":
        return _trtllm_v017(path, url, campaign, date, notes, chips, models)
    per_gpu = version == "devguide"
    out = []
    for title, header, body in _tables(path):
        name, rtx = title.split("|")
        name, _, suffix = name.partition(" - ")
        rtx = rtx or suffix
        for col, cell in enumerate(header[1:], start=1):
            match = _HEADER.match(cell)
            if not match:
                raise ScaleDataError(f"{path}: table '{name}': column header {cell!r} is not 'CHIP<br/>TPn (FPn)'")
            n_gpus, chip_name, spec, prec = match.groups()
            chip_pub = rtx or chip_name
            lay = _layout(spec)
            if n_gpus and int(n_gpus) != lay["gpus"]:
                raise ScaleDataError(f"{path}: table '{name}': {cell!r} names {n_gpus} GPUs, layout gives {lay['gpus']}")
            published = TRT_CHECKPOINTS[version].get((name, prec), name)
            model = _catalogue_model(published) or published
            for cells in body:
                value = _num(cells[col]) if col < len(cells) else ""
                if not value:
                    continue
                isl, osl = cells[0].split("/")
                chip = CHIPS[chip_pub]
                out.append(_row(
                    campaign=campaign, publisher="nvidia-tensorrt-llm", source_url=url, date=date,
                    chip=chip, chip_published=chip_pub, chip_catalogued="yes" if chip in chips else "no",
                    model=model, model_published=published, model_catalogued="yes" if model in models else "no",
                    precision=prec.lower(), framework="tensorrt-llm (trtllm-bench, pytorch backend)",
                    framework_version=fw_version, isl=isl, osl=osl, load_kind="offline-max-throughput",
                    disaggregated="no", metric_notes=notes,
                    **{("output_tok_s_per_gpu" if per_gpu else "output_tok_s_total"): value}, **lay,
                ))
    return out


def _trtllm_v017(path: Path, url: str, campaign: str, date: str, notes: str,
                 chips: set[str], models: set[str]) -> list[dict[str, str]]:
    tables = _tables(path)
    if len(tables) != 2:
        raise ScaleDataError(f"{path}: expected 2 tables (offline, online), found {len(tables)}")
    (_, header, body), (_, online_header, online_body) = tables
    out = []
    model = tp = ""
    for cells in body:
        model, tp = cells[0] or model, cells[1] or tp
        isl, osl = (s.strip() for s in cells[2].split(","))
        for col, cell in enumerate(header[3:], start=3):
            value = _num(cells[col])
            if not value:
                continue
            chip_pub, prec = re.match(r"^(.*) \((FP\d+)\)$", cell).groups()
            chip, cat = CHIPS[chip_pub], _catalogue_model(model)
            out.append(_row(
                campaign=campaign, publisher="nvidia-tensorrt-llm", source_url=url, date=date,
                chip=chip, chip_published=chip_pub, chip_catalogued="yes" if chip in chips else "no",
                gpus=tp, model=cat or model, model_published=model,
                model_catalogued="yes" if (cat or model) in models else "no", precision=prec.lower(),
                framework="tensorrt-llm (trtllm-bench, engine)", framework_version="0.17",
                isl=isl, osl=osl, load_kind="offline-max-throughput", tp=tp, pp=1, disaggregated="no",
                output_tok_s_total=value, metric_notes=notes,
            ))
    online_url = url + "#online-serving-measurements"
    online_notes = ("Triton tensorrtllm_backend online serving, 500 requests at a fixed request rate "
                    "(QPS; INF = all at once), BF16; Mean TTFT and Mean ITL in ms as published; output_tok_s_total "
                    "and total_tok_s_total are the whole TP group's")
    model = gpu = tp = isl = osl = ""
    for cells in online_body:
        if len(cells) != len(online_header):
            raise ScaleDataError(f"{path}: online table row {cells} has {len(cells)} cells, expected "
                               f"{len(online_header)}")
        model, gpu, tp = cells[0] or model, cells[1] or gpu, cells[2] or tp
        isl, osl = cells[3] or isl, cells[4] or osl
        qps, req_s, ttft, itl, total, output = cells[5:]
        chip, cat = CHIPS[gpu], _catalogue_model(model)
        out.append(_row(
            campaign="trtllm-online-serving-v0.14", publisher="nvidia-tensorrt-llm", source_url=online_url,
            date="2024-11", chip=chip, chip_published=gpu, chip_catalogued="yes" if chip in chips else "no",
            gpus=tp, model=cat or model, model_published=model,
            model_catalogued="yes" if (cat or model) in models else "no", precision="bf16",
            framework="tensorrt-llm (triton tensorrtllm_backend)", framework_version="0.14.0",
            isl=isl, osl=osl, load_kind="request-rate-unbounded" if qps == "INF" else "request-rate",
            request_rate_per_s="" if qps == "INF" else qps, tp=tp, pp=1, disaggregated="no",
            requests_per_s=req_s, ttft_ms_mean=ttft, itl_ms_mean=itl, total_tok_s_total=total,
            output_tok_s_total=output,
            metric_notes=online_notes + "; date = v0.14.0 release month (result date not published)",
        ))
    return out


# ---- hand-copied blog figures ------------------------------------------------------------------


def blog_rows(chips: set[str], models: set[str]) -> list[dict[str, str]]:
    """Rows of ``raw/lmsys-blogs/points.csv`` (already in the output schema, catalogue flags set here)."""
    path = RAW / "lmsys-blogs" / "points.csv"
    with open(path, newline="") as f:
        lines = [ln for ln in f if not ln.startswith("#")]
    out = []
    for n, r in enumerate(csv.DictReader(lines), start=2):
        unknown = set(r) - set(COLUMNS)
        if unknown:
            raise ScaleDataError(f"{path}: line {n}: unknown columns {sorted(unknown)}")
        chip, model = CHIPS[r["chip_published"]], _catalogue_model(r["model_published"]) or r["model_published"]
        r.update(chip=chip, chip_catalogued="yes" if chip in chips else "no", model=model,
                 model_catalogued="yes" if model in models else "no")
        out.append(_row(**{k: v for k, v in r.items() if k != "retrieved"}))
    return out


# ---- overlap with the aiconfigurator data ------------------------------------------------------

_FRAMEWORK_OF = {"sglang": "sglang", "trt": "trtllm", "vllm": "vllm"}


def mark_overlap(rows: list[dict[str, str]]) -> None:
    """Flag InferenceX rows whose point is also in ``measured_aggregated_serving.csv``.

    That file's ``db-dump/2026-04-27`` rows come from the same InferenceX database; a row
    overlaps when chip, framework, precision, ISL/OSL, tp and concurrency match and the
    median TPOT agrees within 2 % (the other file rounds to 0.01 ms).
    """
    path = HERE / "measured_aggregated_serving.csv"
    with open(path, newline="") as f:
        theirs = [r for r in csv.DictReader(ln for ln in f if not ln.startswith("#"))
                  if r["source"].startswith("db-dump/")]
    index: dict[tuple, list[float]] = {}
    for r in theirs:
        key = (_catalogue_model(r["model"]) or r["model"], r["system"].removesuffix("_sxm"), r["backend"],
               r["precision"], r["isl"], r["osl"], r["tp"], r["conc"])
        index.setdefault(key, []).append(float(r["tpot_ms"]))
    for r in rows:
        if not r["campaign"].startswith("inferencex-") or r["disaggregated"] != "no":
            continue
        key = (r["model"], r["chip"], _FRAMEWORK_OF.get(r["framework"], ""), r["precision"], r["isl"], r["osl"],
               r["tp"], r["concurrency"])
        tpot = float(r["tpot_ms_median"] or r["tpot_ms_mean"] or "nan")
        hit = any(abs(t - tpot) <= 0.02 * tpot for t in index.get(key, []))
        r["overlaps_measured_aggregated"] = "yes" if hit else "no"


# ---- assembly ----------------------------------------------------------------------------------


def _sort_key(r: dict[str, str]) -> tuple:
    return (r["campaign"], r["chip"], r["model"], r["framework"], r["precision"], r["spec_decode"],
            r["disaggregated"], int(r["isl"] or 0), int(r["osl"] or 0), int(r["gpus"] or 0),
            int(r["tp"] or 0), r["ep"], r["dp_attention"], r["load_kind"],
            float(r["concurrency"] or 0), float(r["request_rate_per_s"] or 0), r["date"], r["run_id"])


def build(inferencex: Path | None, existing: Path = OUT_PATH) -> list[dict[str, str]]:
    """Every row, sorted; InferenceX rows from ``inferencex`` or, without it, from ``existing``."""
    chips = _catalogue_names(REPO / "topology" / "catalog" / "chips.yaml", "chips")
    models = _catalogue_names(REPO / "costmodels" / "catalog" / "models.yaml", "models")
    rows = [*trtllm_rows("v0.17", chips, models), *trtllm_rows("v1.0", chips, models),
            *trtllm_rows("devguide", chips, models), *blog_rows(chips, models)]
    if inferencex is not None:
        ix = [_ix_row(r, chips, models) for r in load_inferencex(inferencex)]
        mark_overlap(ix)
    elif existing.exists():
        with open(existing, newline="") as f:
            ix = [r for r in csv.DictReader(f) if r["campaign"].startswith("inferencex-")]
        for r in ix:  # the catalogue may have grown since the captures were read
            r.update(chip_catalogued="yes" if r["chip"] in chips else "no",
                     model_catalogued="yes" if r["model"] in models else "no")
    else:
        ix = []
    return sorted(rows + ix, key=_sort_key)


def write(rows: list[dict[str, str]], path: Path = OUT_PATH) -> None:
    """Write atomically (a temporary file renamed over the target)."""
    tmp = path.with_suffix(".csv.tmp")
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


def counts_table(rows: list[dict[str, str]]) -> str:
    """Markdown table of the point counts per (campaign, chip, model), and of those at concurrency ≥ 32."""
    counts: dict[tuple[str, str, str], list[int]] = {}
    for r in rows:
        c = counts.setdefault((r["campaign"], r["chip"], r["model"]), [0, 0])
        c[0] += 1
        c[1] += bool(r["concurrency"]) and int(r["concurrency"]) >= 32
    lines = ["| campaign | chip | model | points | at concurrency >= 32 |", "| --- | --- | --- | --- | --- |"]
    lines += [f"| {k[0]} | {k[1]} | {k[2]} | {n} | {high} |" for k, (n, high) in sorted(counts.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--inferencex", type=Path, help="folder with the InferenceX API captures (*.json)")
    p.add_argument("--out", type=Path, default=OUT_PATH)
    p.add_argument("--counts", action="store_true", help="print the point counts per (campaign, chip, model)")
    args = p.parse_args(argv)
    try:
        rows = build(args.inferencex, args.out)
    except (ScaleDataError, OSError, KeyError, ValueError) as exc:
        print(f"import_scale_data: {exc}", file=sys.stderr)
        return 2
    write(rows, args.out)
    print(f"wrote {len(rows)} rows to {args.out}")
    if args.counts:
        print(counts_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
