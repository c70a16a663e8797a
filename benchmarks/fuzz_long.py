"""The long fuzz profile: the strategies and checks of tests/test_fuzz.py, many more examples.

Runs the properties — valid instances (load → solve with CBC, 10 s → verify), invalid
instances (must raise InputError), mangled files (load or InputError), small rates (valid
instances with demand scaled by 1e-4…1e-12, solved with CBC or HiGHS → verify), tampered plans
(one number of a solved plan changed: refused unless within tolerance, tests/test_verify_property.py)
and devices as inputs (/dev/zero, /dev/urandom, /dev/null, a pipe: InputError, never unbounded
reads) — without shrinking, recording every outcome instead of stopping at the first failure, and
writes ``benchmarks/fuzz_long.json`` with the counts, the slowest examples and each failure (kind,
error, the example itself) so it can become a regression test. Signals and time limits are
exercised by tests/test_signals.py and tests/test_time_limit.py (real processes). The process runs under a
soft address-space limit (``--memory-limit-gb``, 12 by default; 0: none) so that an example that allocates
without bound is a ``MemoryError`` recorded as a crash with its example, not the whole run killed by the
kernel.

Three families probe what an attacker can hand the tool (tests/test_candidate_cache_security.py,
tests/test_deploy_safety.py, tests/test_provenance_check.py):

* **cache_tamper** — the Mélange toy's on-disk candidate-cache entry with one mutation of its bytes (a
  byte flipped, the file truncated, bytes inserted, a pickle in its place, its gzip JSON edited and
  re-compressed under the original header, a symbolic link in its place): the solve (HiGHS) must give
  the uncached plan, byte for byte, run no code and write through no link; the cache is used ("hit")
  only when the mutation left the bytes as they were, else it says why ("refused (warning)").
* **hostile_names** — the bertha-lpddr plan with one name (class, instance, pool id, chip, traffic class,
  site, model, draft) set to a hostile string (shell metacharacters, newlines, NUL, non-ASCII…): the
  loader refuses it, or it is a valid name and ``placement.deploy.build`` (a drawn format and engine)
  refuses it cleanly or writes relative paths, YAML that loads and shell that ``bash -n`` accepts.
* **provenance_edits** — the bertha-lpddr plan with one provenance field changed: invalid (exit 2),
  an unknown model (exit 2), a mismatch with the instance (exit 5), or accepted only when the value is
  the instance's own (or an unrecorded optional field) or a field that is only a warning.

Usage::

    .venv/bin/python benchmarks/fuzz_long.py [--valid 400] [--invalid 1000] [--mangled 1000]
        [--small-rates 100] [--tamper 1000] [--cache-tamper 300] [--hostile-names 500]
        [--provenance-edits 500] [--seed 6] [--memory-limit-gb 12]
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import pickle
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import test_fuzz as fz
import test_verify_property as tp
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st
from test_candidate_cache_security import _entries, _Marker  # the cache tests' marker and listing

#: An example slower than this is reported; one slower than HANG_S is aborted and counted as a hang.
SLOW_S = 20.0
HANG_S = 180.0


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang(f"no answer within {HANG_S:.0f} s")


def _run(name: str, strategy, check, examples: int, seed_value: int, report: dict) -> None:
    outcomes: Counter = Counter()
    failures: list[dict] = []
    slow: list[dict] = []
    count = [0]

    @seed(seed_value)
    @settings(max_examples=examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(strategy)
    def prop(example):
        count[0] += 1
        start = time.perf_counter()
        signal.alarm(int(HANG_S))
        try:
            outcomes[check(example)] += 1
        except _Hang as e:
            outcomes["hang"] += 1
            failures.append({"kind": "hang", "error": str(e), "example": example})
        except AssertionError as e:
            outcomes["violation"] += 1
            failures.append({"kind": "violation", "error": str(e)[:2000], "example": example})
        except Exception as e:  # noqa: BLE001 - a crash is what we are looking for
            outcomes["crash"] += 1
            failures.append({"kind": "crash", "error": f"{type(e).__name__}: {e}"[:2000],
                             "traceback": traceback.format_exc()[-3000:], "example": example})
        finally:
            signal.alarm(0)
        seconds = time.perf_counter() - start
        if seconds > SLOW_S:
            slow.append({"seconds": round(seconds, 1), "example": example})

    start = time.perf_counter()
    prop()
    report[name] = {
        "examples": count[0],
        "outcomes": dict(sorted(outcomes.items())),
        "crashes": outcomes["crash"],
        "violations": outcomes["violation"],
        "hangs": outcomes["hang"],
        "seconds": round(time.perf_counter() - start, 1),
        "slow_examples": sorted(slow, key=lambda s: -s["seconds"])[:5],
        "failures": failures[:20],
    }
    print(f"{name}: {count[0]} examples, {dict(outcomes)} in {report[name]['seconds']} s", flush=True)


def _cap_memory(gigabytes: float) -> None:
    """A soft RLIMIT_AS of ``gigabytes`` GiB (0: none): a runaway allocation raises MemoryError in the example
    that makes it. The hard limit is left as it is (the solvers' own child limits may still be set)."""
    if gigabytes > 0:
        _, hard = resource.getrlimit(resource.RLIMIT_AS)
        soft = int(gigabytes * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (soft if hard == resource.RLIM_INFINITY else min(soft, hard), hard))


def _tamper_check(plans: dict):
    """The tamper property of tests/test_verify_property.py as a check of one drawn case."""
    from placement.core.instance.errors import InputError
    from placement.core.plans.plan import parse_plan
    from placement.core.verify.verifier import verify

    def check(case) -> str:
        name, index, new = case
        ctx, doc, leaves = plans[name]
        path, old = leaves[index % len(leaves)]
        doc = copy.deepcopy(doc)
        tp._set(doc, path, new(old))
        try:
            plan = parse_plan(doc)
        except InputError:
            return "refused by the loader"
        if verify(ctx, plan):
            return "rejected by the verifier"
        assert tp._within_tolerance(path, old, new(old)), f"{name}: {'.'.join(map(str, path))} {old!r} passed"
        return "passed within tolerance"

    return check


def _tamper_cases():
    """(instance, leaf index, how to change the old value)."""
    change = st.sampled_from([
        lambda v: 0, lambda v: -v, lambda v: -1, lambda v: float("nan"), lambda v: float("inf"),
        lambda v: 1e300, lambda v: v * 2, lambda v: v * 0.5, lambda v: v + 1, lambda v: v * (1 + 1e-9),
        lambda v: 10**6, lambda v: 5e-324])
    return st.tuples(st.sampled_from(tp.INSTANCES), st.integers(0, 10**6), change)


def _devices(report: dict) -> None:
    """Special files as instance and plan inputs: each must be an InputError naming the file."""
    from placement.core.instance.errors import InputError
    from placement.core.instance.loading import load_instance
    from placement.core.plans.plan import read_plan

    outcomes: Counter = Counter()
    failures = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        fifo = Path(tmp) / "pipe.yaml"
        os.mkfifo(fifo)
        paths = ["/dev/zero", "/dev/urandom", "/dev/null", str(fifo)]
        for path in paths:
            for read in (load_instance, read_plan):
                if path == str(fifo):  # a writer that never stops: the cap must end the read
                    pid = os.fork()
                    if pid == 0:  # pragma: no cover - the child writes until the reader closes
                        try:
                            with open(fifo, "wb") as w:
                                while True:
                                    w.write(b"a" * 65536)
                        finally:
                            os._exit(0)
                try:
                    read(path)
                    outcomes["loaded"] += 1
                    failures.append({"kind": "violation", "error": f"{path} loaded", "example": path})
                except InputError as e:
                    ok = path in str(e)
                    outcomes["input-error" if ok else "violation"] += 1
                    if not ok:
                        failures.append({"kind": "violation", "error": str(e), "example": path})
                except Exception as e:  # noqa: BLE001
                    outcomes["crash"] += 1
                    failures.append({"kind": "crash", "error": f"{type(e).__name__}: {e}", "example": path})
                finally:
                    if path == str(fifo):
                        os.waitpid(pid, 0)
    report["devices"] = {"examples": sum(outcomes.values()), "outcomes": dict(outcomes),
                         "crashes": outcomes["crash"], "violations": outcomes["violation"], "hangs": 0,
                         "seconds": round(time.perf_counter() - start, 1), "slow_examples": [],
                         "failures": failures}
    print(f"devices: {dict(outcomes)}", flush=True)


# ---- cache_tamper ---------------------------------------------------------------------------------------------

BERTHA = ROOT / "instances" / "bertha-lpddr.yaml"


def _put(path: Path, data: bytes) -> None:
    """``data`` as a new private file (0600) at ``path``, replacing a file or link there (never followed)."""
    if path.is_symlink() or path.exists():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, 0o600)


def _cache_mutations(size: int):
    """(kind, parameters) of one change to an entry of ``size`` bytes; offsets favour the header."""
    offset = st.one_of(st.integers(0, 100), st.integers(0, size + 8))
    edit = st.one_of(st.tuples(st.just("capacity x10"), st.integers(0, 10**6), st.integers(0, 10**6)),
                     st.tuples(st.just("drop column"), st.integers(0, 10**6)),
                     st.tuples(st.just("same JSON")))
    return st.one_of(
        st.tuples(st.just("flip"), offset, st.integers(1, 255)),
        st.tuples(st.just("truncate"), offset),
        st.tuples(st.just("insert"), offset, st.binary(min_size=0, max_size=64)),
        st.tuples(st.just("pickle"), st.sampled_from(["whole file", "after the header"])),
        st.tuples(st.just("json"), edit),
        st.tuples(st.just("symlink")))


def _mutated(good: bytes, mutation: tuple, marker: Path) -> bytes | None:
    """The entry's new bytes after ``mutation`` (None: a symbolic link takes its place)."""
    kind = mutation[0]
    header, body = good.split(b"\n", 1)
    if kind == "flip":
        at = mutation[1] % len(good)
        return good[:at] + bytes([good[at] ^ mutation[2]]) + good[at + 1:]
    if kind == "truncate":
        return good[:mutation[1]]
    if kind == "insert":
        at = min(mutation[1], len(good))
        return good[:at] + mutation[2] + good[at:]
    if kind == "pickle":
        code = pickle.dumps(_Marker(marker))
        return code if mutation[1] == "whole file" else header + b"\n" + code
    if kind == "json":
        doc = json.loads(gzip.decompress(body))
        edit = mutation[1]
        columns = doc["columns"]
        if edit[0] == "capacity x10":
            caps = columns["capacity"][edit[1] % len(columns["capacity"])]
            caps[edit[2] % len(caps)] *= 10
        elif edit[0] == "drop column":
            drop = edit[1] % len(columns["name"])
            for field, values in columns.items():
                if isinstance(values, list) and len(values) == len(columns["name"]):
                    columns[field] = values[:drop] + values[drop + 1:]
        return header + b"\n" + gzip.compress(json.dumps(doc).encode(), compresslevel=1, mtime=0)
    assert kind == "symlink", kind
    return None


def _cache_tamper_check(folder: Path, entry: Path, good: bytes, uncached: str, scratch: Path):
    """One mutation of the toy's cache entry, written in place, then a solve with the cache folder: the
    uncached plan, no code run, no link written through; a hit only when the bytes are unchanged (and an
    unchanged entry must hit, without a warning)."""
    import placement
    from placement.core.pipeline.solve import solve
    from placement.core.replicas import candidate_cache
    from placement.core.replicas.cache_store import CacheWarning

    toy = placement.load_instance(Path(placement.__file__).parent / "instances" / "melange-toy.yaml")
    marker = scratch / "code-ran"
    victim = scratch / "victim.txt"

    def check(mutation) -> str:
        _put(entry, good)  # the good entry, before each example
        marker.unlink(missing_ok=True)
        victim.write_bytes(b"precious")
        new = _mutated(good, mutation, marker)
        if new is None:
            entry.unlink()
            entry.symlink_to(victim)
        else:
            _put(entry, new)
        candidate_cache.clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            plan = solve(toy, backend="highs")
        hits = candidate_cache.cache_info()["disk_hits"]
        candidate_cache.clear()
        said = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
        assert not marker.exists(), "a planted pickle ran"
        assert victim.read_bytes() == b"precious" and not victim.is_symlink(), "the link's target was written"
        assert not entry.is_symlink(), "the planted link was left in place"
        assert plan.canonical_json() == uncached, f"the plan differs from the uncached one (warnings: {said})"
        unchanged = new == good
        if said:
            assert not unchanged, f"an unchanged entry was refused: {said}"
            return "refused (warning)"
        assert unchanged, f"a changed entry ({len(new or b'')} bytes, was {len(good)}) was used"
        assert hits == 1, f"an unchanged entry was not read (disk hits {hits})"
        return "hit"

    return check


def _cache_tamper(examples: int, seed_value: int, report: dict) -> None:
    """Make the toy's good entry (private folder), the uncached plan, then run the family."""
    import placement
    from placement.core.pipeline.solve import solve
    from placement.core.replicas import candidate_cache

    toy = placement.load_instance(Path(placement.__file__).parent / "instances" / "melange-toy.yaml")
    before = os.environ.get(candidate_cache.CACHE_DIR_ENV)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            os.environ[candidate_cache.CACHE_DIR_ENV] = ""
            candidate_cache.clear()
            uncached = solve(toy, backend="highs")
            assert uncached.status == "optimal" and abs(uncached.cost_usd_per_hour - 6.70) < 1e-6, uncached.status
            folder = Path(tmp) / "cache"
            folder.mkdir(mode=0o700)
            scratch = Path(tmp) / "scratch"
            scratch.mkdir(mode=0o700)
            os.environ[candidate_cache.CACHE_DIR_ENV] = str(folder)
            candidate_cache.clear()
            solve(toy, backend="highs")
            candidate_cache.clear()
            (entry,) = _entries(folder)
            good = entry.read_bytes()
            assert good.startswith(b"placement-cache 1 hmac-sha256 "), good[:40]
            _run("cache_tamper", _cache_mutations(len(good)),
                 _cache_tamper_check(folder, entry, good, uncached.canonical_json(), scratch),
                 examples, seed_value, report)
    finally:
        candidate_cache.clear()
        if before is None:
            os.environ.pop(candidate_cache.CACHE_DIR_ENV, None)
        else:
            os.environ[candidate_cache.CACHE_DIR_ENV] = before


# ---- hostile_names --------------------------------------------------------------------------------------------

#: Where a plan holds a name (tests/test_deploy_safety.py NAME_FIELDS).
NAME_PATHS = [("classes", 0, "name"), ("instance",), ("pools", 0, "id"), ("pools", 0, "chip"),
              ("pools", 0, "traffic_class"), ("pools", 0, "sites", 0, "site"), ("provenance", "model"),
              ("provenance", "draft_model")]
SHELL_METACHARACTERS = "$()`;|&<>'\"\\ *?!#~{}[]"
HOSTILE_ALPHABET = sorted(set("abcXYZ019-_." + SHELL_METACHARACTERS + "\n\t\x00é\u202eß日\u200b\r"))


def _bertha_plan() -> tuple:
    """The bertha-lpddr plan (HiGHS) as a JSON document, and its context."""
    from placement.core.instance.context import Context
    from placement.core.instance.loading import load_instance
    from placement.core.pipeline.solve import solve

    inst = load_instance(BERTHA)
    plan = solve(inst, backend="highs")
    assert plan.status == "optimal" and plan.verified and plan.provenance is not None, plan.status
    return json.loads(plan.model_dump_json()), Context.of(inst)


def _hostile_cases():
    """(field path, hostile string, (format, engine))."""
    valid = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_.\-]{0,66}\Z", fullmatch=True)
    hostile = st.one_of(
        st.text(alphabet=HOSTILE_ALPHABET, min_size=0, max_size=64),
        st.tuples(valid, st.sampled_from(SHELL_METACHARACTERS + "\n\t\x00")).map("".join),
        valid)
    target = st.one_of(st.just(("llm-d", "vllm")),
                       st.tuples(st.sampled_from(["k8s", "dynamo"]), st.sampled_from(["vllm", "sglang", "trtllm"])))
    return st.tuples(st.sampled_from(NAME_PATHS), hostile, target)


def _get(doc, path):
    for key in path:
        doc = doc[key]
    return doc


def _hostile_names_check(doc: dict):
    """A hostile name in the plan: refused by the loader, or a valid name (or the original) that deploy refuses
    cleanly or turns into relative paths, YAML that loads and shell that parses."""
    import yaml

    from placement.core.instance.errors import InputError
    from placement.core.instance.schema import NAME_PATTERN
    from placement.core.plans.plan import parse_plan
    from placement.deploy import build

    def check(case) -> str:
        path, value, (fmt, engine) = case
        original = _get(doc, path)
        edited = copy.deepcopy(doc)
        tp._set(edited, path, value)
        try:
            plan = parse_plan(edited)
        except InputError:
            return "refused by the loader"
        assert re.fullmatch(NAME_PATTERN, value) or value == original, f"{path}: {value!r} accepted"
        try:
            files = build(plan, fmt=fmt, engine=engine)
        except InputError:
            return "refused by deploy"
        for rel, text in files.items():
            pure = PurePosixPath(rel)
            assert not pure.is_absolute() and ".." not in pure.parts and "\\" not in rel, f"path {rel!r}"
            if rel.endswith((".yaml", ".yml")):
                try:
                    list(yaml.safe_load_all(text))
                except yaml.YAMLError as e:
                    raise AssertionError(f"{rel}: not YAML: {e}") from None
            if rel.endswith(".sh"):
                r = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True, check=False)
                assert r.returncode == 0, f"{rel}: bash -n: {r.stderr.strip()}"
        return "deployed"

    return check


# ---- provenance_edits -----------------------------------------------------------------------------------------

PROVENANCE_FIELDS = ["model", "draft_model", "precision_weights", "precision_attention", "precision_kv",
                     "precision_activations", "framework", "schema_version", "tool_version", "instance_sha256"]
#: Fields that may differ in a plan that re-verifies (a warning, placement.core.plans.provenance._NOTED_FIELDS).
WARNED_FIELDS = ("tool_version", "schema_version", "instance_sha256")
#: Matched fields a plan may leave unrecorded (None).
OPTIONAL_FIELDS = ("precision_attention", "framework")
ORIGINAL = "<the original value>"


def _provenance_cases():
    """(provenance field, value): catalogue models, precisions, frameworks, versions, hashes, text, None."""
    from costmodels.models import load_model_catalog

    pool = sorted(load_model_catalog()) + [
        "fp4", "fp8", "bf16", "int4", "fp3", "FP8", "fp16", "",
        "pooled", "vllm", "sglang", "trtllm", "tgi", "VLLM", "vllm ",
        "1", "2", "9", "0.1.0", "0.0.9.dev3", "0.1.0; rm -rf ~", "$(touch x)", "my-own-model",
        "0" * 64, "A" * 64, "a4a47b9085", "g" * 64]
    value = st.one_of(st.sampled_from(pool), st.text(max_size=40), st.none(), st.just(ORIGINAL),
                      st.text(alphabet="0123456789abcdef", min_size=64, max_size=64),
                      st.from_regex(r"\A[0-9]+(\.[0-9]+){0,3}(\.dev[0-9]+)?\Z", fullmatch=True))
    return st.tuples(st.sampled_from(PROVENANCE_FIELDS), value)


def _provenance_edits_check(doc: dict, ctx):
    """One provenance field changed: exit 2 (invalid, unknown model), exit 5 (mismatch), or accepted only as
    the instance's own value, an unrecorded optional field, or a field that is only a warning."""
    from placement.core.instance.errors import InputError
    from placement.core.plans.plan import parse_plan
    from placement.core.plans.provenance import compare_provenance, provenance

    wants = provenance(ctx)

    def check(case) -> str:
        field, value = case
        if value == ORIGINAL:
            value = doc["provenance"][field]
        edited = copy.deepcopy(doc)
        edited["provenance"][field] = value
        try:
            plan = parse_plan(edited)
        except InputError:
            return "exit 2 (invalid)"
        try:
            violations, said = compare_provenance(ctx, plan)
        except InputError:
            return "exit 2 (unknown model)"
        if violations:
            return "exit 5 (mismatch)"
        own = getattr(wants, field)
        assert field in WARNED_FIELDS or value == own or (value is None and field in OPTIONAL_FIELDS), \
            f"provenance.{field} = {value!r} accepted (the instance's is {own!r})"
        return "accepted with warning" if said else "accepted"

    return check


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--valid", type=int, default=400)
    ap.add_argument("--invalid", type=int, default=1000)
    ap.add_argument("--mangled", type=int, default=1000)
    ap.add_argument("--small-rates", type=int, default=100)
    ap.add_argument("--tamper", type=int, default=1000)
    ap.add_argument("--cache-tamper", type=int, default=300)
    ap.add_argument("--hostile-names", type=int, default=500)
    ap.add_argument("--provenance-edits", type=int, default=500)
    ap.add_argument("--seed", type=int, default=6)
    ap.add_argument("--memory-limit-gb", type=float, default=12.0)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "fuzz_long.json")
    args = ap.parse_args(argv)
    signal.signal(signal.SIGALRM, _alarm)
    _cap_memory(args.memory_limit_gb)
    report: dict = {"seed": args.seed, "time_limit_s": fz.TIME_LIMIT_S, "memory_limit_gb": args.memory_limit_gb}
    _run("valid", fz.valid_documents(big=True), fz.check_valid, args.valid, args.seed, report)

    def invalid(case):
        doc, kind = case
        fz.check_invalid(doc)
        return f"input-error ({kind})"

    _run("invalid", fz.invalid_documents(), invalid, args.invalid, args.seed, report)
    with tempfile.TemporaryDirectory() as tmp:
        def mangled(case):
            suffix, text = case
            path = Path(tmp) / f"instance{suffix}"
            path.write_text(text, encoding="utf-8", errors="surrogatepass")
            return fz.check_text(path)

        _run("mangled", fz.mangled_texts(), mangled, args.mangled, args.seed, report)

    def small_rate(case):
        doc, backend = case
        return f"{backend} {fz.check_valid(doc, backend=backend)}"

    _run("small_rates", fz.small_rate_documents(), small_rate, args.small_rates, args.seed, report)
    from verify_plans import solved

    plans = {}
    for name in tp.INSTANCES:
        _, ctx, doc = solved(name)
        plans[name] = (ctx, doc, list(tp._leaves(doc)))
    _run("tamper", _tamper_cases(), _tamper_check(plans), args.tamper, args.seed, report)
    _devices(report)
    _cache_tamper(args.cache_tamper, args.seed, report)
    bertha, bertha_ctx = _bertha_plan()
    _run("hostile_names", _hostile_cases(), _hostile_names_check(bertha), args.hostile_names, args.seed, report)
    _run("provenance_edits", _provenance_cases(), _provenance_edits_check(bertha, bertha_ctx),
         args.provenance_edits, args.seed, report)
    families = ("valid", "invalid", "mangled", "small_rates", "tamper", "devices", "cache_tamper", "hostile_names",
                "provenance_edits")
    report["total"] = {k: sum(report[p][k] for p in families) for k in ("examples", "crashes", "violations", "hangs")}
    # A tampered plan that the verifier accepted beyond tolerance; the other violations are solver plans it rejected.
    report["total"]["verifier_escapes"] = report["tamper"]["violations"]
    from placement.core.plans.output import write_atomic

    write_atomic(args.out, json.dumps(report, indent=2, default=str) + "\n")
    print(json.dumps(report["total"]))
    return 1 if report["total"]["crashes"] or report["total"]["violations"] or report["total"]["hangs"] else 0


if __name__ == "__main__":
    sys.exit(main())
