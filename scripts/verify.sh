#!/usr/bin/env bash
# The verify build in two looks (docs/verdicts.md, fedrepro/claims/plan.py):
#   look 1: every paper at scale verify, claims decided at the first look's level (0.025);
#   plan:   seeds added only to the experiments of the claims that more replicates would decide,
#           cheapest first, up to config.yaml's verify.budget_cpu_s less what look 1 spent;
#   look 2: the planned runs (runs already computed are copied, not re-run), the open claims decided at
#           the second look's level; a claim decided at look 1 keeps its verdict.
# Resumable: run it again after an interruption; each step redoes only what is missing.
#   bash scripts/verify.sh                 # 2 parallel jobs; extra arguments go to both snakemake calls
#   VERIFY_BUDGET_CPU_S=12000 bash scripts/verify.sh   # another budget than config.yaml's verify.budget_cpu_s
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
mkdir -p results/verify
read -r budget a1 a2 factor < <(python - <<'PY'
import yaml
v = (yaml.safe_load(open("config.yaml")) or {}).get("verify") or {}
a = v.get("alpha_per_look", [0.025, 0.025])
import os
print(os.environ.get("VERIFY_BUDGET_CPU_S") or v.get("budget_cpu_s", 10000), a[0], a[1], v.get("max_factor", 4))
PY
)
look() {   # look N: the config overlay of this look
    printf 'scale: verify\nverify: {look: %s, budget_cpu_s: %s, alpha_per_look: [%s, %s], max_factor: %s}\n' \
        "$1" "$budget" "$a1" "$a2" "$factor" > "results/verify/look$1.yaml"
}
# runs are keyed by their content (cell ids): a changed config hash (the looks differ in seeds) re-runs nothing
# run "OVERLAY FILES" [EXTRA OPTIONS] -- the user's arguments go first: --configfile, --rerun-triggers and
# --forcerun take every word after them
run() { local files=$1; shift; local extra=(); while [ $# -gt 0 ] && [ "$1" != "--" ]; do extra+=("$1"); shift; done
        shift; bash scripts/reproduce.sh "$@" --rerun-triggers mtime input "${extra[@]}" --configfile config.yaml $files; }

look 1
run results/verify/look1.yaml -- "$@" 2>&1 | tee results/verify/look1.log | tail -n 3
for f in results/*/claims.parquet; do cp "$f" "${f%.parquet}.look1.parquet"; done
python -m fedrepro.claims.plan --results results --budget-cpu-s "$budget" --max-factor "$factor" \
    --out results/verify/plan.yaml > /dev/null
look 2
run "results/verify/look2.yaml results/verify/plan.yaml" --forcerun claims -- "$@" 2>&1 | tee results/verify/look2.log | tail -n 3
echo "[verify] plan: results/verify/plan.md; verdicts: results/<paper>/claims.md" >&2
