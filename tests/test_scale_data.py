"""Schema of ``benchmarks/data/throughput_at_scale.csv`` (public throughput-at-scale measurements).

Reads only files in the repository: the CSV, the chip and model catalogues, and the
committed raw excerpts the converter rebuilds its non-InferenceX rows from.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import math
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "benchmarks" / "data"
CSV_PATH = DATA / "throughput_at_scale.csv"

#: The columns the brief names, in any order (the file may hold more).
REQUIRED = {
    "campaign", "source_url", "date", "retrieved", "chip", "gpus", "model", "precision", "framework",
    "framework_version", "isl", "osl", "concurrency", "load_kind", "tp", "pp", "ep", "dp_attention",
    "disaggregated", "spec_decode", "output_tok_s_per_gpu", "total_tok_s_per_gpu", "tok_s_per_user",
    "ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99", "tpot_ms_mean", "tpot_ms_median", "tpot_ms_p99",
    "itl_ms_mean", "itl_ms_p99", "e2el_ms_mean", "metric_notes",
    "chip_catalogued", "model_catalogued", "publisher",
}
INTEGER = ("isl", "osl", "gpus", "tp", "pp", "ep", "prefill_gpus", "decode_gpus", "concurrency")
THROUGHPUT = ("output_tok_s_per_gpu", "total_tok_s_per_gpu", "input_tok_s_per_gpu", "output_tok_s_total",
              "total_tok_s_total")
LOAD_KINDS = {"concurrency", "request-rate", "request-rate-unbounded", "offline-max-throughput",
              "saturated-decode", "saturated-prefill-and-decode"}
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


def _names(path: Path, key: str) -> set[str]:
    return {entry["name"] for entry in yaml.safe_load(path.read_text())[key]}


@pytest.fixture(scope="module")
def table() -> tuple[list[str], list[dict[str, str]]]:
    with open(CSV_PATH, newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def test_columns_present(table):
    header, _ = table
    assert REQUIRED <= set(header), sorted(REQUIRED - set(header))


def test_every_row_has_provenance(table):
    _, rows = table
    for n, r in enumerate(rows, start=2):
        assert r["campaign"] and r["publisher"], f"line {n}: no campaign/publisher"
        assert r["source_url"].startswith("https://"), f"line {n}: source_url {r['source_url']!r}"
        assert DATE.match(r["date"]) and DATE.match(r["retrieved"]), f"line {n}: date {r['date']!r}"
        assert r["metric_notes"], f"line {n}: no metric_notes"


def test_numbers_positive(table):
    header, rows = table
    numeric = [c for c in header if c in INTEGER or c.endswith(("_ms_mean", "_ms_median", "_ms_p99"))
               or "tok_s" in c or c in ("request_rate_per_s", "requests_per_s")]
    for n, r in enumerate(rows, start=2):
        for c in numeric:
            if r[c] == "":
                continue
            value = float(r[c])
            assert math.isfinite(value) and value > 0, f"line {n}: {c} = {r[c]!r}"
            if c in INTEGER:
                assert value == int(value), f"line {n}: {c} = {r[c]!r} is not a whole number"
        assert any(r[c] for c in THROUGHPUT), f"line {n}: no throughput figure"


def test_load_and_layout_consistent(table):
    _, rows = table
    for n, r in enumerate(rows, start=2):
        assert r["load_kind"] in LOAD_KINDS, f"line {n}: load_kind {r['load_kind']!r}"
        assert bool(r["concurrency"]) == (r["load_kind"] == "concurrency"), f"line {n}: concurrency"
        assert bool(r["request_rate_per_s"]) == (r["load_kind"] == "request-rate"), f"line {n}: request rate"
        if r["prefill_gpus"] and r["decode_gpus"]:
            assert int(r["prefill_gpus"]) + int(r["decode_gpus"]) == int(r["gpus"]), f"line {n}: GPU split"


def test_names_recognised_or_flagged(table):
    _, rows = table
    chips = _names(REPO / "topology" / "catalog" / "chips.yaml", "chips")
    models = _names(REPO / "costmodels" / "catalog" / "models.yaml", "models")
    for n, r in enumerate(rows, start=2):
        assert r["chip_catalogued"] == ("yes" if r["chip"] in chips else "no"), f"line {n}: chip {r['chip']}"
        assert r["model_catalogued"] == ("yes" if r["model"] in models else "no"), f"line {n}: model {r['model']}"


def test_coverage_and_no_mlperf(table):
    _, rows = table
    assert len({r["campaign"] for r in rows}) >= 4
    assert len({r["chip"] for r in rows}) >= 5
    high = [r for r in rows if r["concurrency"] and int(r["concurrency"]) >= 32]
    assert len(high) >= 200
    for n, r in enumerate(rows, start=2):
        text = " ".join(r.values()).lower()
        assert "mlperf" not in text and "mlcommons" not in text, f"line {n} cites MLPerf"


def test_converter_reproduces_the_file():
    spec = importlib.util.spec_from_file_location("import_scale_data", DATA / "import_scale_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=module.COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(module.build(None, CSV_PATH))
    assert buf.getvalue() == CSV_PATH.read_text()
