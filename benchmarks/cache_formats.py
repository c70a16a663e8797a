"""Write and read time and size of one candidate generation in the on-disk cache's format and others.

The candidate cache (:mod:`placement.core.replicas.candidate_cache`) stores a generation as gzip-compressed
JSON tables (:mod:`placement.core.replicas.candidate_codec`). This script compares, on the generation of one
instance (made here, not read from disk): Python pickle (what the cache wrote before; never read from
a file), the JSON tables plain and gzip-compressed at levels 1 and 6, and the same tables as numpy
arrays in an ``.npz`` (ragged lists flattened with offsets, None as -1 or NaN; loaded with
``allow_pickle=False``). Each time is the best of three, in CPU seconds of this process (each format
is single-threaded; CPU time is steadier than wall time on a shared machine); the cycle collector is
off as the cache has it.

Run::

    .venv/bin/python benchmarks/cache_formats.py benchmarks/instances/bench-leaf-spine-d1000-k8-c6-s0.yaml
"""

from __future__ import annotations

import gc
import gzip
import io
import itertools
import math
import pickle
import sys
import time

import numpy as np

import placement
from placement.core.instance.context import Context
from placement.core.replicas import candidate_codec as codec
from placement.core.replicas.candidates import generate


def _best(fn, n: int = 3):
    times = []
    for _ in range(n):
        start = time.process_time()
        out = fn()
        times.append(time.process_time() - start)
    return min(times), out


def _npz(doc: dict, compressed: bool) -> bytes:
    arrays = {"steps": np.array(doc["steps"], dtype=str), "counts": np.array([doc["generated"], doc["feasible"]])}
    for table in ("parts", "layouts", "configs", "columns"):
        for field, values in doc[table].items():
            key = f"{table}.{field}"
            if values and isinstance(values[0], list):  # ragged: flat values and offsets
                arrays[key + ".offsets"] = np.cumsum([0] + [len(v) for v in values])
                values = [x for v in values for x in v]
            if any(isinstance(v, str) for v in values):
                arrays[key] = np.array(values, dtype=str)
            elif any(isinstance(v, float) for v in values):
                arrays[key] = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
            else:
                arrays[key] = np.array([-1 if v is None else v for v in values], dtype=np.int64)
    buf = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buf, **arrays)
    return buf.getvalue()


def _from_npz(data: bytes, like: dict) -> dict:
    """The document again (lists, None back where ``like`` has None)."""
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        lists = {k: z[k].tolist() for k in z.files}
    doc = {"format": codec.FORMAT, "generated": lists["counts"][0], "feasible": lists["counts"][1],
           "network_free": like["network_free"], "steps": lists["steps"]}
    for table in ("parts", "layouts", "configs", "columns"):
        doc[table] = {}
        for field, values in like[table].items():
            got = lists[f"{table}.{field}"]
            if (offsets := lists.get(f"{table}.{field}.offsets")) is not None:
                got = [got[a:b] for a, b in itertools.pairwise(offsets)]
            elif None in values:
                got = [None if v == -1 or (isinstance(v, float) and math.isnan(v)) else v for v in got]
            doc[table][field] = got
    return doc


def main(path: str) -> None:
    gc.disable()
    start = time.perf_counter()
    cands = generate(Context.of(placement.load_instance(path)))
    generate_s = time.perf_counter() - start  # wall: generation may use worker processes
    rows = []
    w, data = _best(lambda: pickle.dumps(cands, protocol=pickle.HIGHEST_PROTOCOL))
    r, _ = _best(lambda: pickle.loads(data))  # our own bytes, in memory
    rows.append(("pickle (before)", w, r, len(data)))
    w, data = _best(lambda: codec.encode(cands))
    r, back = _best(lambda: codec.decode(data))
    assert back.columns == cands.columns and back.configs == cands.configs
    rows.append(("JSON", w, r, len(data)))
    for level in (1, 6):
        w, data = _best(lambda level=level: gzip.compress(codec.encode(cands), compresslevel=level, mtime=0))
        r, _ = _best(lambda data=data: codec.decode(gzip.decompress(data)))
        rows.append((f"JSON + gzip -{level}", w, r, len(data)))
    doc = codec._tables(cands)
    for compressed in (False, True):
        w, data = _best(lambda c=compressed: _npz(codec._tables(cands), c))
        r, back = _best(lambda data=data: codec._candidates(_from_npz(data, doc)))
        assert back.columns == cands.columns and back.configs == cands.configs
        rows.append(("npz" + (" compressed" if compressed else ""), w, r, len(data)))
    print(f"{path}: {len(cands.columns):,} columns, generated in {generate_s:.1f} s wall")
    print("| format | write CPU s | read CPU s | MB |\n| --- | --- | --- | --- |")
    for name, w, r, size in rows:
        print(f"| {name} | {w:.2f} | {r:.2f} | {size / 1e6:.1f} |")


if __name__ == "__main__":
    main(sys.argv[1])
