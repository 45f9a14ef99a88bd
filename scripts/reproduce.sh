#!/usr/bin/env bash
# Regenerate every figure, table and claims report (default: quick scale) with Snakemake.
#   bash scripts/reproduce.sh                 # all papers, 2 parallel jobs
#   bash scripts/reproduce.sh -j 8 fedepm     # extra arguments go to snakemake
#   bash scripts/reproduce.sh --config scale=paper --profile workflow/profiles/slurm
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
export PATH="$PWD/.venv/bin:$PATH"
jobs=()
case " $* " in *" -j"*|*" --jobs"*|*" --cores"*|*" -c"*|*"--profile"*) ;; *) jobs=(-j "${FEDREPRO_JOBS:-2}") ;; esac
# the greedy scheduler: Snakemake's default ILP scheduler solves an integer program (CBC) at every
# scheduling step, CPU taken from the build's two cores for jobs that all ask for one thread
sched=()
case " $* " in *" --scheduler"*) ;; *) sched=(--scheduler greedy) ;; esac
snakemake "${jobs[@]}" "${sched[@]}" --rerun-incomplete "$@"
# the report of what was just built (a paper key in "$@" gives that paper's report); its error,
# if any, is shown and fails the script
if ! snakemake --report results/report.html "$@"; then
    echo "[reproduce] error: the HTML report results/report.html could not be built (snakemake's message is above)" >&2
    exit 1
fi
echo "[reproduce] figures in figures/, results in results/, report in results/report.html" >&2
