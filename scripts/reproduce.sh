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
# Snakemake's job rate limiter (default 100 jobs / 1 s) re-arms a 1-s timer at every pass of its
# scheduling loop, so every finished job adds one more wake-up per second for the rest of the build
# (thousands of passes a minute by the end, each re-evaluating the ready jobs). A 5-s window keeps
# the limit far above what 2 cores start and wakes the loop a fifth as often; the build may end up
# to 5 s after its last job (the last timer). A cluster profile keeps its own setting.
rate=()
case " $* " in *" --max-jobs-per-timespan"*|*"--profile"*) ;; *) rate=(--max-jobs-per-timespan 1000/5s) ;; esac
snakemake "${jobs[@]}" "${sched[@]}" "${rate[@]}" --rerun-incomplete "$@"
# the report of what was just built (a paper key in "$@" gives that paper's report); its error,
# if any, is shown and fails the script
if ! snakemake --report results/report.html "$@"; then
    echo "[reproduce] error: the HTML report results/report.html could not be built (snakemake's message is above)" >&2
    exit 1
fi
echo "[reproduce] figures in figures/, results in results/, report in results/report.html" >&2
