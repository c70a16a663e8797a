#!/usr/bin/env bash
# The exact commands behind benchmarks/RESULTS.md (solver benchmarks, issue 5).
#
#   benchmarks/run_bench.sh            # everything (about 2.5 h on 2 cores)
#   benchmarks/run_bench.sh scaling    # one experiment: shipped | scaling | exact | allmodes | af | grouping |
#                                      # baselines | export
#
# Every instance is generated (seeded) into benchmarks/instances/ and every
# result is written as JSON (+ PNG) into benchmarks/. Each case runs in a fresh
# process (its peak RSS is its own) with a 12 GB address-space cap.
# The markdown tables of RESULTS.md are rendered from the JSON files:
#   .venv/bin/python -c "import json,sys; from placement.bench.report import report_markdown; \
#     print(report_markdown(json.load(open(sys.argv[1]))))" benchmarks/bench_scaling.json
set -euo pipefail
cd "$(dirname "$0")/.."
P=.venv/bin/placement
I=benchmarks/instances
mkdir -p "$I"
what="${1:-all}"

run() { [[ "$what" == all || "$what" == "$1" ]]; }

# 0. The shipped instances, both solvers, to proven optimality.
if run shipped; then
  $P bench instances/*.yaml --solvers highs,cbc --time-limit 300 --json benchmarks/bench_shipped.json
fi

# 1. Scaling: 10 .. 10,000 scale-up domains, 8 chip types, 6 classes, aggregated + PD,
#    HiGHS vs CBC, stop at 0.1 % gap or 300 s; greedy, LP bound and exhaustive search beside.
if run scaling; then
  $P bench --sizes 10,100,1000,10000 --family leaf-spine --chip-types 8 --classes 6 --modes aggregated,pd \
    --solvers highs,cbc --time-limit 300 --gap 0.001 --baselines greedy,lp,exhaustive --exhaustive-budget 60 \
    --json benchmarks/bench_scaling.json --plot benchmarks/bench_scaling.png --instances-dir "$I" \
    --title "leaf-spine, 8 chip types, 6 classes, aggregated + PD, stop at 0.1 % gap"
fi

# 1b. The same fleets solved to proven optimality (default gap 1e-9), HiGHS and CBC, 300 s limit.
if run exact; then
  $P bench "$I"/bench-leaf-spine-d{10,100,1000,10000}-k8-c6-s0-agg.pd.yaml --solvers highs,cbc --time-limit 300 \
    --json benchmarks/bench_scaling_exact.json --plot benchmarks/bench_scaling_exact.png \
    --title "leaf-spine, 8 chip types, 6 classes, aggregated + PD, proven optimal (gap 1e-9)"
fi

# 2. The issue's target configuration: all modes (aggregated, PD, PD with attention-FFN split),
#    8 chip types, 6 classes, 100 and 1,000 domains (solved in two levels, see solvers/twolevel.py).
if run allmodes; then
  $P bench --sizes 100,1000 --family leaf-spine --chip-types 8 --classes 6 \
    --solvers highs,cbc --time-limit 300 --gap 0.001 --prepare-limit 1800 \
    --json benchmarks/bench_allmodes.json --instances-dir "$I"
fi

# 3. Attention-FFN disaggregation where it is meant to be used: Rubin NVL72 + Groq LPX racks in mixed pods,
#    all modes, 6 classes, DeepSeek-V3 (MoE).
if run af; then
  $P bench --sizes 10,100,1000 --family mixed --chips rubin,lp30 --classes 6 --model deepseek-v3 \
    --solvers highs,cbc --time-limit 300 --gap 0.001 --baselines greedy,lp \
    --json benchmarks/bench_af.json --plot benchmarks/bench_af.png --instances-dir "$I" \
    --title "Rubin NVL72 + Groq LPX mixed pods, DeepSeek-V3, 6 classes, all modes"
fi

# 4. Symmetry grouping: 1,000 identical GB200 NVL72 racks as 1, 10, 100 and 1,000 domain groups
#    (and 10 racks as one group), 6 classes, all modes.
if run grouping; then
  for g in 1 10 100 1000; do
    $P generate --family uniform --domains 1000 --groups "$g" --chips gb200 --classes 6 \
      --out "$I/bench-uniform-d1000-g$g-k1-c6-s0.yaml"
  done
  $P generate --family uniform --domains 10 --groups 1 --chips gb200 --classes 6 \
    --out "$I/bench-uniform-d10-g1-k1-c6-s0.yaml"
  $P bench "$I"/bench-uniform-d10-g1-k1-c6-s0.yaml "$I"/bench-uniform-d1000-g{1,10,100,1000}-k1-c6-s0.yaml \
    --solvers highs,cbc --time-limit 300 --gap 0.001 --json benchmarks/bench_grouping.json \
    --plot benchmarks/bench_grouping.png --plot-x groups \
    --title "1,000 identical GB200 NVL72 racks as 1..1,000 domain groups (and 10 racks as 1)"
fi

# 5. Baselines where exhaustive search can finish: 100 domains, 8 chip types, 1..4 classes, aggregated + PD.
if run baselines; then
  for c in 1 2 3 4; do
    $P generate --family leaf-spine --domains 100 --chip-types 8 --classes "$c" --modes aggregated,pd \
      --out "$I/bench-leaf-spine-d100-k8-c$c-s0-agg.pd.yaml"
  done
  $P bench "$I"/bench-leaf-spine-d100-k8-c{1,2,3,4}-s0-agg.pd.yaml --solvers highs --time-limit 300 \
    --baselines exhaustive,greedy,lp --exhaustive-budget 120 --json benchmarks/bench_baselines.json
fi

# 6. Export for external solvers (LP and MPS of the 1,000-domain scaling instance).
if run export; then
  $P export "$I"/bench-leaf-spine-d1000-k8-c6-s0-agg.pd.yaml --lp /tmp/bench-d1000.lp --mps /tmp/bench-d1000.mps
fi
