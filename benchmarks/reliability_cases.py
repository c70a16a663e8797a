"""Issue 15's concrete cases, each run as a whole ``placement`` process, with its exit code judged.

Every case of the issue text — tampered plans given to ``check``, valid inputs that made solves
fail (small rates, demand ×1e-6 on every shipped instance, prices ×1e-4, the Mélange-Arena
single-chip-type model, the LP30 price $0.389/h), numeric extremes, time limits, signals,
special files as inputs and outputs, credentials, strict YAML scalars — is run as its own
process and must end in one of the answers the issue allows:

* ``ok``: exit 0 with a plan that ``placement check`` accepts, or exit 3 with a diagnosis;
* ``input error <field>``: exit 2 naming the field (or file);
* ``rejected``: a tampered plan refused by ``check`` (exit 2 from the plan loader or 5 from the
  verifier), never a traceback;
* a few cases say more (the time limit's wall clock, no CBC left after a signal, an output
  that is still a FIFO or a link, no credential in the output).

Prints one line per case (case, exit code, seconds, expected, OK) and writes them as JSON.

Run::

    .venv/bin/python benchmarks/reliability_cases.py [--json benchmarks/reliability_cases.json]
        [--only SUBSTRING]
    .venv/bin/python benchmarks/reliability_cases.py --merge /tmp/rc-*.json   # runs of single groups, as one
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "benchmarks")]
PLACEMENT = str(Path(sys.executable).parent / "placement")
SHIPPED = sorted(p.name for p in (ROOT / "instances").glob("*.yaml"))
BAD = ROOT / "tests" / "bad_instances"
#: A case still running after this long is a hang.
HANG_S = 600.0


@dataclass
class Run:
    """One finished process: exit code, wall and CPU seconds (its own and its children's), output."""

    code: int
    seconds: float
    out: str
    cpu_s: float = 0.0

    @property
    def traceback(self) -> bool:
        return "Traceback (most recent call last)" in self.out


@dataclass
class Result:
    case: str
    exit: int | None
    seconds: float
    expected: str
    ok: bool
    detail: str = ""
    extra: dict = field(default_factory=dict)


def run(*argv: str, timeout: float = HANG_S, env: dict | None = None) -> Run:
    """``placement argv…`` to the end (or the hang limit, then exit None)."""
    start, cpu = time.monotonic(), _children_cpu_s()
    try:
        p = subprocess.run([PLACEMENT, *argv], check=False, capture_output=True, text=True, timeout=timeout,
                           env=env, cwd=ROOT)
        return Run(p.returncode, time.monotonic() - start, p.stdout + p.stderr, _children_cpu_s() - cpu)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace") + (e.stderr or b"").decode(errors="replace")
        return Run(-1, time.monotonic() - start, "HANG: " + out)


def _children_cpu_s() -> float:
    """User + system seconds of the finished children (and theirs, e.g. CBC) of this process."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _tail(text: str, n: int = 300) -> str:
    return " ".join(text.split())[-n:]


def _dump(path: Path, doc: dict) -> str:
    path.write_text(yaml.safe_dump(doc, sort_keys=False) if path.suffix == ".yaml" else json.dumps(doc))
    return str(path)


def shipped(name: str) -> dict:
    return yaml.safe_load((ROOT / "instances" / name).read_text(encoding="utf-8"))


class Cases:
    """The cases, each a method returning its :class:`Result`; files go to one temporary folder."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.n = 0

    def file(self, suffix: str) -> Path:
        self.n += 1
        return self.tmp / f"f{self.n}{suffix}"

    # ---- the three answers ----------------------------------------------------------------------

    def solved_ok(self, case: str, instance: str, *opts: str, expected: str = "ok") -> Result:
        """``solve`` ends in exit 0 with a plan ``check`` accepts, or exit 3 with a diagnosis."""
        plan = self.file(".json")
        r = run("solve", instance, "--json", str(plan), "-q", *opts)
        if r.code == 0:
            c = run("check", instance, str(plan))
            ok, detail = c.code == 0, f"check exit {c.code}"
            if plan.exists():
                doc = json.loads(plan.read_text())
                detail += f"; {doc['status']} ${doc['cost_usd_per_hour']:.6g}/h"
        elif r.code == 3:
            ok, detail = "  - " in r.out and not r.traceback, "infeasible: " + _tail(r.out, 200)
        else:
            ok, detail = False, _tail(r.out)
        return Result(case, r.code, r.seconds, expected, ok, detail)

    def input_error(self, case: str, *argv: str, field_: str) -> Result:
        """Exit 2 naming ``field_``, no traceback."""
        r = run(*argv)
        ok = r.code == 2 and field_ in r.out and not r.traceback
        return Result(case, r.code, r.seconds, f"exit 2 naming {field_}", ok, _tail(r.out, 200))

    def rejected(self, case: str, instance: str, doc: dict) -> Result:
        """A tampered plan: ``check`` exits 2 (plan loader) or 5 (verifier), no traceback."""
        plan = self.file(".json")
        plan.write_text(json.dumps(doc))
        r = run("check", instance, str(plan))
        ok = r.code in (2, 5) and not r.traceback
        return Result(case, r.code, r.seconds, "rejected: exit 2 or 5", ok, _tail(r.out, 200))

    # ---- tampered plans -------------------------------------------------------------------------

    def tampered(self) -> list[Result]:
        inst = str(ROOT / "instances" / "bertha-lpddr.yaml")
        plan = self.file(".json")
        r = run("solve", inst, "--json", str(plan), "-q", "--solver", "highs")
        assert r.code == 0, r.out
        base = json.loads(plan.read_text())
        out = []

        def edit(name: str, change: Callable[[dict], None]) -> None:
            doc = copy.deepcopy(base)
            change(doc)
            out.append(self.rejected(f"check: {name}", inst, doc))

        def all_nan(d):
            for p in d["pools"]:
                p["replicas"] = 0
                p["usd_per_hour"] = 0
                for s in p["sites"]:
                    s["replicas"] = 0
                    for load in s["load_rps"]:  # plan layout 2: [{class, mode, stage, rate_rps}]
                        load["rate_rps"] = float("nan")
            d["cost_usd_per_hour"] = 0

        def dup_pool(d):
            p = copy.deepcopy(d["pools"][0])
            p["replicas"] = p["sites"][0]["replicas"] = 1_000_001
            d["pools"].append(p)

        def dup_site(d):
            d["pools"][0]["sites"].append(copy.deepcopy(d["pools"][0]["sites"][0]))

        def wrong_chip(d):
            p = next(p for p in d["pools"] if p["chip"] != "h100")
            p["config"]["main"]["chip"] = "h100"
            p["chip"] = "h100"

        def tp_one_chip(d):
            p = d["pools"][0]
            p["config"]["main"].update(tp=8, chips=1)
            p["tp"], p["chips_per_replica"], p["chips"] = 8, 1, p["replicas"]

        def domain_index(value):
            def f(d):
                d["pools"][0]["sites"][0]["domains"] = [value]
            return f

        def all_in_domain_0(d):
            for p in d["pools"]:
                for s in p["sites"]:
                    s["domains"] = [0] * len(s["domains"])

        def negative_unused_step(d):
            s = d["pools"][0]["sites"][0]
            cls = d["pools"][0]["traffic_class"]
            s["load_rps"].append({"class": cls, "mode": "aggregated", "stage": "decode", "rate_rps": -5.0})

        def unknown_config_chip(d):
            d["pools"][0]["config"]["main"]["chip"] = "no-such-chip"

        def changed_kind(value):
            def f(d):
                d["pools"][0]["config"]["kind"] = value
            return f

        def unknown_pair_site(d):
            d["pairs"].append({"column": d["pools"][0]["column"], "source_site": d["pools"][0]["sites"][0]["site"],
                               "target_site": "nowhere", "replicas": 1, "latency_us": 1.0})

        for name, change in [
            ("every load NaN, replicas 0, cost 0", all_nan), ("duplicate pool id, 1,000,001 replicas", dup_pool),
            ("duplicate site entry", dup_site), ("config.main.chip h100 on another chip", wrong_chip),
            ("tp=8 charged 1 chip per replica", tp_one_chip), ("domain index 1000000", domain_index(1_000_000)),
            ("domain index -1", domain_index(-1)), ("every replica in domain 0", all_in_domain_0),
            ("negative load on a step of an unused mode", negative_unused_step),
            ("config chip not in the catalogue", unknown_config_chip), ("config kind a number", changed_kind(12)),
            ("config kind decode -> prefill", changed_kind("prefill")),
            ("pair to an unknown site", unknown_pair_site),
        ]:
            edit(name, change)
        return out

    # ---- valid inputs that made solves fail -----------------------------------------------------

    def small_rates(self) -> list[Result]:
        from test_fuzz import _one_class_on_16_h100

        out = []
        for rate in (1e-4, 1e-5, 1e-6, 1e-8, 1e-10, 1e-11, 1e-12):
            path = _dump(self.file(".yaml"), _one_class_on_16_h100(rate))
            for backend in ("cbc", "highs"):
                out.append(self.solved_ok(f"small rate {rate:g} req/s on 16 H100 ({backend})", path,
                                          "--solver", backend))
        return out

    def tiny_demand(self) -> list[Result]:
        out = []
        for name in SHIPPED:
            doc = shipped(name)
            for c in doc["workload"]["classes"]:
                c["rate_rps"] *= 1e-6
            path = self.tmp / f"tiny-{name}"
            path.write_text(yaml.safe_dump(doc, sort_keys=False))
            for backend in ("cbc", "highs"):
                out.append(self.solved_ok(f"demand x1e-6: {name} ({backend})", str(path), "--solver", backend))
        return out

    def cheap_prices(self) -> list[Result]:
        from backend_cases import scaled

        inst = scaled("bertha-lpddr.yaml", 1e-4)
        path = _dump(self.file(".yaml"), inst.model_dump(mode="json", exclude_unset=True))
        rows = [self.solved_ok(f"prices x1e-4: bertha-lpddr ({b})", path, "--solver", b) for b in ("cbc", "highs")]
        costs = [float(r.detail.rsplit("$", 1)[1].removesuffix("/h")) for r in rows if r.ok and "$" in r.detail]
        agree = len(costs) == 2 and abs(costs[0] - costs[1]) <= 1e-6 * max(costs)
        rows.append(Result("prices x1e-4: bertha-lpddr, CBC = HiGHS", None, 0.0, "same cost", agree, f"{costs}"))
        return rows

    def arena(self) -> list[Result]:
        from test_certify import arena

        path = _dump(self.file(".yaml"), arena())
        r = self.solved_ok("Mélange-Arena single_chip_type (cbc)", path, "--solver", "cbc",
                           expected="ok at $3.03/h")
        r.ok = r.ok and "$3.03/h" in r.detail
        return [r]

    def lp30_point(self) -> list[Result]:
        """The point of the 20-point LP30 price sweep (0.2:2:20) that the verifier once refused."""
        from placement.core.instance.paths import set_path

        doc = shipped("rubin-lpx-deepseek.yaml")
        set_path(doc, "hardware.chips.lp30.usd_per_hour", 0.2 + 1.8 / 19 * 2)  # the sweep's third point
        path = _dump(self.tmp / "rubin-lpx-deepseek-lp30.yaml", doc)
        return [self.solved_ok("rubin-lpx-deepseek, lp30 at $0.389/h (cbc)", path, "--solver", "cbc")]

    # ---- numeric extremes and strict scalars: exit 2 naming the field ---------------------------

    def bad_files(self) -> list[Result]:
        expected = yaml.safe_load((BAD / "expected.yaml").read_text(encoding="utf-8"))
        cases = {
            "underflow-rate.yaml": "rate 1e-320", "underflow-measured-capacity.yaml": "measured capacity 1e-300",
            "overflow-head-dim.yaml": "head_dim 1e400", "huge-integer.yaml": "5,000-digit integer",
            "sliding-window-layers.yaml": "sliding-window layers > layers",
            "overflow-measured-capacity.yaml": "measured capacity 1e308",
            "measured-conflict.yaml": "measured duplicates that conflict", "boolean-rate.yaml": "rate_rps: true",
            "sexagesimal-rate.yaml": "rate_rps: 1:30", "duplicate-chip.yaml": "duplicate chip names",
        }
        out = []
        for name, what in cases.items():
            want = expected[name]
            field_ = want["contains"][0]
            for command in ("validate", "solve"):
                out.append(self.input_error(f"{what} ({command} {name})", command, str(BAD / name), field_=field_))
        return out

    def capacity_1e300(self) -> list[Result]:
        doc = shipped("melange-toy.yaml")
        doc["measured_capacity"][0]["max_rps_per_replica"] = 1e-300
        path = _dump(self.file(".yaml"), doc)
        return [self.input_error("measured capacity 1e-300 in melange-toy (solve)", "solve", path,
                                 field_="measured_capacity")]

    # ---- time limits and signals -----------------------------------------------------------------

    def generated(self) -> str:
        path = self.tmp / "gen-100.yaml"
        if not path.exists():
            r = run("generate", "--domains", "100", "--out", str(path))
            assert r.code == 0, r.out
        return str(path)

    def time_limit(self) -> list[Result]:
        """The limit bounds the whole command. On a loaded machine wall clocks are noise (start-up alone took
        10-15 s at load average 12), so the judge is CPU: the command may use at most the CPU of a ``validate``
        of the same instance (start-up, imports, reading) plus the limit on each of the threads the solves run
        on (:func:`solvers.backends.threads.solve_threads`: a two-level fleet's parts are solved side by side)
        plus 2 s; and with a limit long enough for the solver to start, wall <= limit + that ``validate``'s
        wall + 5 s."""
        from solvers.backends.threads import solve_threads

        threads = solve_threads()
        inst = self.generated()
        out = []
        for limit in (1, 20):
            for backend in ("cbc", "highs"):
                v = run("validate", inst)
                plan = self.file(".json")
                r = run("solve", inst, "--time-limit", str(limit), "--solver", backend, "--json", str(plan), "-q")
                if r.code == 0:
                    c = run("check", inst, str(plan))
                    ok, detail = c.code == 0, f"plan, check exit {c.code}"
                else:
                    ok, detail = r.code == 4 and "time limit" in r.out and not r.traceback, _tail(r.out, 160)
                ok = ok and r.cpu_s <= v.cpu_s + threads * limit + 2.0 and (limit == 1 or
                                                                           r.seconds <= limit + v.seconds + 5)
                out.append(Result(f"--time-limit {limit}, generated 100 domains ({backend})", r.code, r.seconds,
                                  f"exit 0 + check, or 4 'time limit'; CPU <= validate's + {threads} x limit + 2 s",
                                  ok,
                                  f"{detail}; CPU {r.cpu_s:.1f} s; validate {v.seconds:.1f} s wall, "
                                  f"{v.cpu_s:.1f} s CPU", {"cpu_s": r.cpu_s, "validate_s": v.seconds,
                                                           "validate_cpu_s": v.cpu_s}))
        for value in ("nan", "-1", "inf"):
            out.append(self.input_error(f"--time-limit {value}", "solve", str(ROOT / "instances/melange-toy.yaml"),
                                        "--time-limit", value, field_="--time-limit"))
        return out

    def signals(self) -> list[Result]:
        from test_signals import _alive, _children, _cmdline

        # A fleet whose CBC solve runs for minutes (the 100-domain all-modes one, a time limit as a guard):
        # test_signals' 10-domain one now ends ~0.5 s after its
        # last CBC starts, so a signal sent then could land after the command had finished (exit 0, or -1
        # for SIGHUP once the handlers are restored at exit), a race of the harness, not of placement.
        slow = ROOT / "benchmarks/instances/bench-leaf-spine-d100-k8-c6-s0-agg.pd.yaml"

        out = []
        # A shell starts background jobs with SIGINT ignored, and an ignored signal stays ignored across exec (as
        # placement rightly leaves it); give the children the default, as a terminal's foreground job has.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGKILL):
            tmp = Path(tempfile.mkdtemp(dir=self.tmp))
            env = {**os.environ, "TMPDIR": str(tmp)}
            start = time.monotonic()
            proc = subprocess.Popen([PLACEMENT, "solve", str(slow), "--solver", "cbc", "--time-limit", "60", "-q"],
                                    env=env, cwd=ROOT,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
            cbc = None
            while cbc is None and proc.poll() is None and time.monotonic() - start < HANG_S:
                cbc = next((c for c in _children(proc.pid) if "/cbc" in _cmdline(c)), None)
                time.sleep(0.05)
            if cbc is None:
                text = proc.communicate()[0].decode(errors="replace")
                out.append(Result(f"{signum.name} during a CBC solve", proc.returncode, time.monotonic() - start,
                                  "CBC started", False, _tail(text)))
                continue
            time.sleep(0.5)
            os.kill(proc.pid, signum)
            try:
                code = proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                running = [_cmdline(c)[:60] for c in _children(proc.pid)]
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                out.append(Result(f"{signum.name} during a CBC solve", None, time.monotonic() - start,
                                  "exit within 60 s of the signal", False, f"still running; children {running}"))
                continue
            deadline = time.monotonic() + 10
            while _alive(cbc) and time.monotonic() < deadline:
                time.sleep(0.05)
            gone = not _alive(cbc)
            left = sorted(str(p.relative_to(tmp)) for p in tmp.rglob("*"))
            if signum == signal.SIGKILL:
                # SIGKILL cannot be caught: CBC dies with its parent (PR_SET_PDEATHSIG), its files stay until
                # the next solve removes the abandoned directory (solvers.backends.scratch)
                after = run("solve", str(ROOT / "instances/melange-toy.yaml"), "--solver", "cbc", "-q", env=env)
                cleaned = after.code == 0 and not any(tmp.iterdir())
                ok = gone and code == -signum and cleaned
                expected = "no CBC left; its files removed by the next solve"
                detail = f"files after the kill: {len(left)}, after the next solve: {len(list(tmp.iterdir()))}"
            else:
                ok = gone and code == 128 + signum and not left
                expected = "exit 128+n, no CBC left, TMPDIR empty"
                detail = f"files left: {left[:4]}"
            out.append(Result(f"{signum.name} during a CBC solve", code, time.monotonic() - start, expected, ok,
                              f"cbc {'gone' if gone else 'ALIVE'}; {detail}"))
            proc.stdout.close()
            if _alive(cbc):
                os.kill(cbc, signal.SIGKILL)
        return out

    # ---- inputs and outputs -----------------------------------------------------------------------

    def devices(self) -> list[Result]:
        out = [self.input_error("validate /dev/zero", "validate", "/dev/zero", field_="/dev/zero")]
        plan = self.file(".json")
        run("solve", str(ROOT / "instances/melange-toy.yaml"), "--json", str(plan), "-q")
        out.append(self.input_error("check instance /dev/zero", "check", "/dev/zero", str(plan), field_="/dev/zero"))
        out.append(self.input_error("check /dev/zero as the plan", "check", str(ROOT / "instances/melange-toy.yaml"),
                                    "/dev/zero", field_="/dev/zero"))
        return out

    def layered_switches(self) -> list[Result]:
        layers, width = 12, 6
        switches = [f"l{i}-{j}" for i in range(layers) for j in range(width)]
        links = [{"source": f"l{i}-{a}", "target": f"l{i + 1}-{b}", "bandwidth_gb_per_s": 400, "latency_us": 1.0}
                 for i in range(layers - 1) for a in range(width) for b in range(width)]
        doc = {"name": "layered", "model": "llama-3.1-8b", "modes": ["aggregated", "pd"],
               "workload": {"classes": [{"name": "chat", "rate_rps": 20, "prompt_tokens": 1000,
                                         "output_tokens": 200, "ttft_ms": 2000, "tpot_ms": 50}]},
               "hardware": {"switches": switches, "links": links, "domains": [
                   {"name": "a", "chip": "h100", "count": 2, "chips_per_domain": 8, "switch": "l0-0"},
                   {"name": "b", "chip": "a100-80gb", "count": 2, "chips_per_domain": 8,
                    "switch": f"l{layers - 1}-0"}]}}
        return [self.solved_ok("12 layers x 6 equal-latency switches", _dump(self.file(".yaml"), doc),
                               "--solver", "highs")]

    def outputs(self) -> list[Result]:
        inst = str(ROOT / "instances/melange-toy.yaml")
        out = []
        fifo = self.tmp / "plan.fifo"
        os.mkfifo(fifo)
        reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
        r = run("solve", inst, "--json", str(fifo), "-q")
        got = reader.communicate(timeout=60)[0]
        ok = r.code == 0 and stat.S_ISFIFO(fifo.stat().st_mode) and b'"pools"' in got
        out.append(Result("--json to a FIFO", r.code, r.seconds, "written in place, still a FIFO", ok,
                          f"fifo kept: {stat.S_ISFIFO(fifo.stat().st_mode)}, {len(got)} bytes read"))
        r = run("solve", inst, "--json", "/dev/null", "-q")
        ok = r.code == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)
        out.append(Result("--json /dev/null", r.code, r.seconds, "written in place, still a device", ok))
        target = self.tmp / "real.json"
        target.write_text("{}")
        link = self.tmp / "link.json"
        link.symlink_to(target)
        r = run("solve", inst, "--json", str(link), "-q")
        ok = r.code == 0 and link.is_symlink() and '"pools"' in target.read_text()
        out.append(Result("--json to a symbolic link", r.code, r.seconds, "link kept, its target written", ok,
                          f"still a link: {link.is_symlink()}"))
        copy_ = self.tmp / "melange.yaml"
        copy_.write_bytes(Path(inst).read_bytes())
        before = copy_.read_bytes()
        r = self.input_error("--json X.yaml over the input X.yaml", "solve", str(copy_), "--json", str(copy_),
                             field_="--json")
        r.ok = r.ok and copy_.read_bytes() == before
        out.append(r)
        return out

    def credentials(self) -> list[Result]:
        r = run("sweep", str(ROOT / "instances/melange-toy.yaml"), "--set", "workload.classes.0.rate_rps=1:2:2",
                "--executor", "ray", "--address", "ray://admin:S3CR3T-TOKEN@127.0.0.1:1", "-q", timeout=300)
        ok = "S3CR3T" not in r.out and "admin:" not in r.out and not r.traceback and r.code in (2, 4)
        return [Result("Ray address with credentials", r.code, r.seconds, "exit 2/4, no credential printed", ok,
                       _tail(r.out, 200))]

    def short_prompt_long_prefix(self) -> list[Result]:
        """Found by the long fuzz (small-rate family, seed 7), at any rate: a 1-token prompt after a 13,377-token
        cached prefix, aggregated on GB300. The verifier's memory floor puts chunk/prompt = 512 prompts, each
        reading its prefix, in every step; the cost model's step reads one prefix, yet its prefill channel
        counts 512 prompts per step. The verifier refuses the plan (exit 5): a cost-model question left open."""
        doc = json.loads((ROOT / "benchmarks" / "fuzz_long.json").read_text())
        example = next((f["example"] for f in doc["small_rates"]["failures"] if f["kind"] == "violation"), None)
        if example is None:
            return []
        inst = copy.deepcopy(example[0])
        for c in inst["workload"]["classes"]:
            c["rate_rps"] *= 1e7  # the same at 0.5 req/s: not a small-rate effect
        return [self.solved_ok("1-token prompt, 13,377 cached, chunk 512 (highs)", _dump(self.file(".yaml"), inst),
                               "--solver", "highs")]


GROUPS = ["tampered", "small_rates", "tiny_demand", "cheap_prices", "arena", "lp30_point", "bad_files",
          "capacity_1e300", "time_limit", "signals", "devices", "layered_switches", "outputs", "credentials",
          "short_prompt_long_prefix"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=ROOT / "benchmarks" / "reliability_cases.json")
    ap.add_argument("--only", default="", help="run the groups whose name contains this")
    ap.add_argument("--merge", type=Path, nargs="+", help="write the cases of these earlier --json outputs as one "
                    "(runs of single groups, e.g. in parallel), in group order, and run nothing")
    args = ap.parse_args(argv)
    if args.merge:
        return _merge(args.merge, args.json)
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="reliability-") as tmp:
        cases = Cases(Path(tmp))
        for group in GROUPS:
            if args.only not in group:
                continue
            try:
                rows = getattr(cases, group)()
            except Exception as e:  # noqa: BLE001 - a broken harness is a failed case, not a lost run
                rows = [Result(group, None, 0.0, "the case runs", False, f"{type(e).__name__}: {e}")]
            for r in rows:
                print(f"{'OK ' if r.ok else 'BAD'} {r.case} | exit {r.exit} | {r.seconds:.1f} s | {r.expected}"
                      f"{' | ' + r.detail if r.detail else ''}", flush=True)
            results += rows
    return _write([r.__dict__ for r in results], args.json)


def _write(rows: list[dict], path: Path) -> int:
    summary = {"cases": len(rows), "ok": sum(r["ok"] for r in rows), "bad": [r["case"] for r in rows if not r["ok"]]}
    path.write_text(json.dumps({"summary": summary, "cases": rows}, indent=2) + "\n")
    print(json.dumps(summary))
    return 0 if not summary["bad"] else 1


def _merge(paths: list[Path], out: Path) -> int:
    def group(path: Path) -> int:  # files named …-GROUP.json, as the --only runs wrote them
        word = path.stem.rsplit("-", 1)[-1]
        return next((i for i, g in enumerate(GROUPS) if g.startswith(word)), len(GROUPS))

    return _write([row for p in sorted(paths, key=group) for row in json.loads(p.read_text())["cases"]], out)


if __name__ == "__main__":
    sys.exit(main())
