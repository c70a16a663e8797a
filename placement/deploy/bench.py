"""``bench.sh``: per traffic class, an aiperf run against the deployment and a check of TTFT and TPOT.

Each class is driven at its planned rate with its prompt and output lengths
(synthetic prompts, streaming chat; lengths of the class's mean and, when the
class says how they vary, the standard deviation σ = cv·mean — aiperf draws
them from a normal distribution), then its measured TTFT and
inter-token latency (aiperf's ``time_to_first_token`` and
``inter_token_latency``, in ms, from ``profile_export_aiperf.json``) are
compared with the plan's prediction and the SLO: the script prints one line
per class and exits 1 if a class misses its SLO. The statistic compared is the
one the class's ``slo_percentile`` bounds (mean → ``avg``). aiperf options as
documented in ai-dynamo/aiperf ``docs/cli_options.md`` (``-m``, ``--url``,
``--endpoint-type``, ``--streaming``, ``--synthetic-input-tokens-mean``,
``--synthetic-input-tokens-stddev``, ``--output-tokens-mean``,
``--output-tokens-stddev``, ``--request-rate``, ``--request-count``,
``--artifact-dir``, ``--tokenizer``, ``--extra-inputs``). ``ignore_eos`` makes
the engine emit every output token asked for, so the lengths are the class's.

Each class is addressed as the deployment serves it: the engines serve it under
its name (``--served-model-name``; TRT-LLM under the checkpoint's), and under
``--format k8s`` at the class's route prefix ``$ENDPOINT/<class>`` (the
Gateway's HTTPRoute); the prompts are tokenized with the checkpoint's tokenizer.
"""

from __future__ import annotations

from placement.core.plans.numbers import num
from placement.core.plans.plan import Plan
from placement.deploy.names import ShellWord, shell_comment, shell_line

__all__ = ["bench_script", "import_hint"]

#: Requests per class: enough for a p99 to be more than one sample, over at least a minute at the planned rate.
MIN_REQUESTS = 1000
_STAT = {"mean": "avg", "p50": "p50", "p90": "p90", "p99": "p99"}

_CHECK = r'''
check() {  # class, artifact dir, statistic, predicted TTFT, TTFT SLO, predicted TPOT, TPOT SLO (ms)
  python3 - "$@" <<'PY'
import json, pathlib, sys
name, art, stat, p_ttft, s_ttft, p_tpot, s_tpot = sys.argv[1:]
doc = json.loads(next(pathlib.Path(art).rglob("profile_export_aiperf.json")).read_text())
doc = doc.get("records", doc)
ttft = doc["time_to_first_token"][stat]
itl = doc["inter_token_latency"]["avg"]
ok = ttft <= float(s_ttft) and itl <= float(s_tpot)
print(f"{name}: TTFT {stat} {ttft:.1f} ms (predicted {p_ttft}, SLO {s_ttft}); "
      f"TPOT {itl:.2f} ms (predicted {p_tpot}, SLO {s_tpot}) -> {'ok' if ok else 'MISSES SLO'}")
sys.exit(0 if ok else 1)
PY
}
'''


def import_hint(plan: Plan, name: str, art: str, engine: str) -> str:
    """The ``placement measure import`` line for a class's aiperf results (docs/closed-loop.md), or why there is
    none: calibration needs a run against one engine layout, so a class served by one aggregated pool gets the
    command with that pool's chip, layout and chips; any other class a comment saying so."""
    pools = [p for p in plan.pools if p.traffic_class == name and p.part == 0]
    if len(pools) != 1 or pools[0].stage != "aggregated":
        return shell_comment(f"{name}: served by {len(pools)} pools ({', '.join(sorted({p.stage for p in pools}))}): "
                             "to calibrate, benchmark one engine on its own (docs/closed-loop.md)")
    p = pools[0]
    return shell_comment("calibrate from it: " + shell_line([
        "placement", "measure", "import", ShellWord(art + "/profile_export_aiperf.json"), "--chip", p.chip,
        "--framework", engine, "--tp", str(p.tp), "--pp", str(p.pp), "--ep", str(p.ep),
        "--dp", str(p.config.main.dp), "--chips", str(p.chips),
        "--out", ShellWord(f'"$OUT"/{shell_line([name])}.measured.yaml')]))


def bench_script(plan: Plan, model: str, tokens: dict[str, tuple], slo_stat: dict[str, str], *,
                 routed: bool = False, named: bool = True, engine: str = "vllm") -> str:
    """The script: ``tokens`` maps class -> (prompt tokens, output tokens[, their standard deviations]);
    ``slo_stat`` class -> percentile; ``routed``: each class at ``$ENDPOINT/<class>``; ``named``: the engines
    serve each class under its name (else under ``model``, the checkpoint); after each class the
    ``placement measure import`` line that takes its results back (:func:`import_hint`)."""
    lines = ["#!/usr/bin/env bash",
             shell_comment(f"Benchmark of the deployment of plan {plan.instance!r}: one aiperf run per traffic class "
                           "at its"),
             "# planned rate, then TTFT / TPOT against the plan's prediction and the SLO.",
             "# ENDPOINT: the OpenAI-compatible address of the deployment (frontend or gateway)"
             + (", each class under its route /<class>." if routed else "."),
             "set -euo pipefail",
             'ENDPOINT="${ENDPOINT:-localhost:8000}"',
             'OUT="${OUT:-artifacts}"',
             "status=0",
             _CHECK.strip("\n")]
    for c in plan.classes:
        prompt, output, *spread = tokens.get(c.name, (None, None))
        prompt_sd, output_sd = spread or (0, 0)
        if prompt is None:
            lines.append(shell_comment(f"{c.name}: prompt and output lengths unknown (give deploy --instance); "
                                       "skipped"))
            continue
        count = max(MIN_REQUESTS, round(c.rate_rps * 60))
        art = ShellWord('"$OUT"/' + shell_line([c.name]))
        url = ShellWord('"$ENDPOINT"' + ("/" + shell_line([c.name]) if routed else ""))
        cmd = ["aiperf", "profile", "-m", c.name if named else model, "--tokenizer", model, "--url", url,
               "--endpoint-type", "chat", "--extra-inputs", "ignore_eos:true",
               "--streaming", "--synthetic-input-tokens-mean", str(prompt),
               "--synthetic-input-tokens-stddev", str(prompt_sd),
               "--output-tokens-mean", str(output), "--output-tokens-stddev", str(output_sd),
               "--request-rate", f"{c.rate_rps:g}", "--request-count", str(count), "--random-seed", "0",
               "--artifact-dir", art]
        stat = _STAT[slo_stat.get(c.name, "mean")]
        check = ["check", c.name, art, stat, num(c.ttft_ms, none="n/a"), f"{c.ttft_slo_ms:g}", num(c.tpot_ms, none="n/a"),
                 f"{c.tpot_slo_ms:g}", ShellWord("|| status=1")]
        lines += [shell_comment(f"class {c.name}: {c.rate_rps:g} req/s, {prompt} prompt + {output} output tokens"),
                  shell_line(cmd), shell_line(check), import_hint(plan, c.name, str(art), engine)]
    lines.append('exit "$status"')
    return "\n".join(lines) + "\n"
