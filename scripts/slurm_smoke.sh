#!/usr/bin/env bash
# SLURM smoke test: run a few FedEPM cells through the real SLURM profile end to end.
#
#   sudo bash scripts/slurm_smoke.sh            (root: it installs packages and starts daemons)
#
# 1. installs slurm-wlm and munge from the distribution's packages (apt-get; skipped if present)
#    and snakemake-executor-plugin-slurm into .venv (skipped if present; bootstrap.sh first);
# 2. starts a throw-away single-node cluster on this machine: munged with a generated key,
#    slurmctld and slurmd with a generated slurm.conf (partition "main", this host's CPUs and
#    memory); key, config, state, logs and the run directory all live in one temporary
#    directory (SLURM_CONF points there), the config is also linked at /etc/slurm/slurm.conf
#    (see below; refused if that file exists), and daemons and link are removed on exit;
# 3. runs `snakemake --profile workflow/profiles/slurm` (the unmodified profile) on FedEPM's fig3
#    experiment with one trial per setting (30 cells) and its fig2 figure: fetch, preprocess,
#    run_cells, aggregate and figure jobs, each a real sbatch job;
# 4. asserts that Snakemake succeeded, that the outputs exist and that SLURM ran every job
#    (COMPLETED in the job-completion log), and that each job was given the memory (--mem) and
#    time limit (-t) its rule declares (resources mem_mb, runtime).
#
# Overrides passed on the command line only (the profile itself is used as shipped):
#   --slurm-status-command squeue
#                               no slurmdbd (accounting_storage/none), so `sacct` cannot answer; squeue --states=all sees
#                               finished jobs for MinJobAge (set to 3600 s here);
#   --slurm-keep-successful-logs, --slurm-init-seconds-before-status-checks 10 (shorter wait).
# The profile's empty slurm_account makes the plugin try to guess one with sacct, which fails
# here; it then submits without -A (plugin 2.8.0 declares --slurm-no-account but does not use it).
# Environment: FEDREPRO_DATA_MIRROR (offline copy of the raw data; honoured if set),
#   SMOKE_DIR (work directory; default: a new mktemp -d, kept afterwards for inspection),
#   SMOKE_PORT (first slurmctld port to try; default 6817; slurmd uses the next free one).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$REPO/.venv/bin/python"
SNAKEMAKE="$REPO/.venv/bin/snakemake"

die() { echo "slurm_smoke: error: $*" >&2; exit 1; }
log() { echo "slurm_smoke: $*"; }

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts munged/slurmctld/slurmd)"
[ -x "$PY" ] || die "$REPO/.venv missing: run 'bash scripts/bootstrap.sh' first"

# --- 1. packages ------------------------------------------------------------------------------
if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
   || ! command -v munged >/dev/null; then
    command -v apt-get >/dev/null || die "slurm/munge missing and no apt-get: install slurm-wlm and munge yourself"
    log "installing slurm-wlm and munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q slurm-wlm munge
fi
if ! "$PY" -c "import snakemake_executor_plugin_slurm" 2>/dev/null; then
    log "installing snakemake-executor-plugin-slurm into .venv"
    "$PY" -m pip install -q snakemake-executor-plugin-slurm
fi
SLURM_VERSION="$(slurmctld -V)"
PLUGIN_VERSION="$("$PY" -c 'import importlib.metadata as m; print(m.version("snakemake-executor-plugin-slurm"))')"
SNAKEMAKE_VERSION="$("$SNAKEMAKE" --version)"
log "$SLURM_VERSION, snakemake $SNAKEMAKE_VERSION, snakemake-executor-plugin-slurm $PLUGIN_VERSION"

# --- 2. a single-node cluster in a temporary directory ----------------------------------------
W="${SMOKE_DIR:-$(mktemp -d /tmp/fedrepro-slurm-smoke.XXXXXX)}"
mkdir -p "$W"/{state,spool,log,run}
chmod 700 "$W"
PIDS=()
DEFAULT_CONF=/etc/slurm/slurm.conf
cleanup() {
    local rc=$?
    # jobs still running (a run stopped by the test's timeout): cancel them while slurmctld is up,
    # then stop whatever of them is left (their scripts live under $W), so no step outlives the cluster
    if [ "${#PIDS[@]}" -gt 0 ]; then
        timeout 20 scancel --full -u "$(id -un)" 2>/dev/null || true
        sleep 2
    fi
    pkill -f "$W/" 2>/dev/null || true
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [ "$(readlink "$DEFAULT_CONF" 2>/dev/null)" = "$W/slurm.conf" ]; then rm -f "$DEFAULT_CONF"; fi
    log "daemons stopped; work directory kept: $W (exit $rc)"
}
trap cleanup EXIT

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
PORT="${SMOKE_PORT:-6817}"
while ! port_free "$PORT"; do PORT=$((PORT + 1)); done
DPORT=$((PORT + 1))
while ! port_free "$DPORT"; do DPORT=$((DPORT + 1)); done

# The jobs' nested `srun` (snakemake-executor-plugin-slurm-jobstep) runs with every SLURM_* variable
# but the job's identity removed, SLURM_CONF included, and then finds no configuration (error:
# "Could not establish a configuration source"). So the generated slurm.conf is also linked at the
# default path, as on a real cluster; this requires that the machine has no Slurm configuration.
if [ -e "$DEFAULT_CONF" ] || [ -L "$DEFAULT_CONF" ]; then
    die "$DEFAULT_CONF exists: this machine already has a Slurm configuration; run the smoke test on a scratch machine or container"
fi
mkdir -p "$(dirname "$DEFAULT_CONF")"
ln -s "$W/slurm.conf" "$DEFAULT_CONF"

dd if=/dev/urandom of="$W/munge.key" bs=1024 count=1 status=none
chmod 400 "$W/munge.key"
munged --foreground --force --key-file="$W/munge.key" --socket="$W/munge.socket" \
    --pid-file="$W/munged.pid" --log-file="$W/log/munged.log" --seed-file="$W/munged.seed" &
PIDS+=($!)
for _ in $(seq 50); do [ -S "$W/munge.socket" ] && break; sleep 0.2; done
[ -S "$W/munge.socket" ] || die "munged did not start; see $W/log/munged.log"
munge --socket="$W/munge.socket" -n </dev/null | unmunge --socket="$W/munge.socket" >/dev/null \
    || die "munge round trip failed; see $W/log/munged.log"

HOST="$(hostname -s)"
CPUS="$(getconf _NPROCESSORS_ONLN)"   # not nproc: it follows OMP_NUM_THREADS, which the test suite sets to 1
MEM_MB="$(free -m | awk '/^Mem:/ {print $2}')"
REAL_MEM=$((MEM_MB * 9 / 10))             # margin: slurmd drains a node reporting less than RealMemory
export SLURM_CONF="$W/slurm.conf"
cat >"$SLURM_CONF" <<EOF
ClusterName=fedrepro-smoke
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$PORT
SlurmdPort=$DPORT
AuthType=auth/munge
AuthInfo=socket=$W/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool
SlurmctldPidFile=$W/slurmctld.pid
SlurmdPidFile=$W/slurmd.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$W/log/jobcomp.log
MinJobAge=3600
MpiDefault=none
ReturnToService=2
MailProg=/bin/true
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$REAL_MEM State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -i &
PIDS+=($!)
slurmd -D &
PIDS+=($!)
for _ in $(seq 60); do
    state="$(sinfo -h -n "$HOST" -o %t 2>/dev/null || true)"
    [ "$state" = idle ] && break
    sleep 1
done
[ "$state" = idle ] || die "node $HOST is '${state:-unreachable}', not idle; see $W/log/slurmctld.log and slurmd.log"
log "cluster up: node $HOST ($CPUS CPUs, RealMemory=$REAL_MEM MB), partition main, ports $PORT/$DPORT"
sbatch --version

# --- 3. the workflow through the SLURM profile ------------------------------------------------
export FEDREPRO_DATA_MIRROR="${FEDREPRO_DATA_MIRROR:-}"
KT=$(( CPUS >= 2 ? 2 : 1 ))     # kernel threads of the run_cells jobs: SLURM must grant that many CPUs
cat >"$W/smoke_config.yaml" <<EOF
# FedEPM fig3 (3 algorithms x k0 {4..20} x m {50, 100}) with one trial per setting: 30 cells.
papers: [fedepm]
paper_overrides:
  fedepm: {fig3: {scales: {quick: {seeds: 1}}}}
kernel_threads: {quick: $KT}
# several run_cells jobs (the quick default, 32 cells a job, would put all 30 in one)
cells_per_job: {quick: 8}
EOF
TARGETS=(results/fedepm/fig3.parquet results/fedepm/fig3.summary.parquet figures/fedepm/fig2.pdf)
ARGS=(--snakefile "$REPO/Snakefile" --directory "$W/run" --configfile "$W/smoke_config.yaml"
      --profile "$REPO/workflow/profiles/slurm"
      --slurm-status-command squeue --slurm-keep-successful-logs
      --slurm-init-seconds-before-status-checks 10)
N_JOBS="$("$SNAKEMAKE" "${ARGS[@]}" --dry-run "${TARGETS[@]}" 2>&1 | awk '$1 == "total" {n = $2} END {print n}')"
[ -n "$N_JOBS" ] || die "the dry run found no jobs"
log "submitting $N_JOBS jobs"
start=$(date +%s)
set +e
"$SNAKEMAKE" "${ARGS[@]}" "${TARGETS[@]}" 2>&1 | tee "$W/log/snakemake.log"
rc=${PIPESTATUS[0]}
set -e
wall=$(( $(date +%s) - start ))
[ "$rc" = 0 ] || die "snakemake exited $rc after ${wall}s; see $W/log/snakemake.log and $W/run/.snakemake/slurm_logs"

# --- 4. checks --------------------------------------------------------------------------------
for t in "${TARGETS[@]}" figures/fedepm/fig2.png; do
    [ -s "$W/run/$t" ] || die "expected output $t is missing"
done
"$PY" - "$W" "$N_JOBS" "$wall" "$KT" <<'PYEOF'
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd

W, n_jobs, wall, kt = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
summary = pd.read_parquet(W / "run/results/fedepm/fig3.summary.parquet")
assert len(summary) == 30, f"fig3 summary has {len(summary)} runs, expected 30"
assert set(summary["kernel_threads"]) == {kt}, f"runs used {set(summary['kernel_threads'])} kernel threads, expected {kt}"

# Every job SLURM ran, from the job-completion log (one line per finished job).
comp = [dict(re.findall(r"(\w+)=(\S*)", line)) for line in (W / "log/jobcomp.log").read_text().splitlines()]
states = [c["JobState"] for c in comp]
assert len(comp) == n_jobs and set(states) == {"COMPLETED"}, \
    f"SLURM finished {len(comp)} jobs with states {states}, expected {n_jobs} COMPLETED"

# What Snakemake asked for (its log: rule, resources, SLURM job id) vs what SLURM granted (the
# completion log: TimeLimit in minutes, Tres cpu=N,mem=...M).
log = (W / "log/snakemake.log").read_text()
declared = {}
for m in re.finditer(r"^rule (\w+):\n((?:    .*\n)+)", log, re.M):
    block = m.group(2)
    jobid, res = re.search(r"^    jobid: (\d+)$", block, re.M), re.search(r"^    resources: (.*)$", block, re.M)
    threads = re.search(r"^    threads: (\d+)$", block, re.M)
    declared[jobid.group(1)] = (m.group(1), dict(kv.split("=", 1) for kv in res.group(1).split(", ")),
                                int(threads.group(1)) if threads else 1)
submitted = dict(re.findall(r"Job (\d+) has been submitted with SLURM jobid (\d+)", log))
assert len(submitted) == n_jobs, f"{len(submitted)} submissions in the Snakemake log, expected {n_jobs}"
granted = {c["JobId"]: c for c in comp}
rules = {}
for jobid, slurm_id in sorted(submitted.items(), key=lambda kv: int(kv[1])):
    rule, res, threads = declared[jobid]
    c = granted[slurm_id]
    mem = int(re.search(r"mem=(\d+)M", c["Tres"]).group(1))
    cpus = int(re.search(r"cpu=(\d+)", c["Tres"]).group(1))
    assert mem == int(res["mem_mb"]) and int(c["TimeLimit"]) == int(res["runtime"]) and cpus == threads, \
        (f"SLURM job {slurm_id} ({rule}): granted {cpus} CPUs, mem {mem} MB / {c['TimeLimit']} min, declared "
         f"threads {threads}, {res['mem_mb']} / {res['runtime']}")
    assert rule != "run_cells" or threads == kt, f"run_cells job {jobid} declared {threads} threads, expected {kt}"
    rules[rule] = rules.get(rule, 0) + 1
    print(f"  SLURM job {slurm_id:>3} {rule:<10} {c['JobState']} {c['StartTime'][11:]}-{c['EndTime'][11:]} "
          f"{cpus} CPU(s), --mem {mem} MB, time limit {c['TimeLimit']} min (declared threads={threads}, "
          f"mem_mb={res['mem_mb']}, runtime={res['runtime']})")
assert rules.get("run_cells", 0) >= 2, f"expected several run_cells jobs, got {rules}"
print(f"slurm_smoke: OK: {n_jobs} SLURM jobs COMPLETED ({', '.join(f'{k} {v}' for k, v in rules.items())}), "
      f"each granted the CPUs, memory and time limit its rule declares ({kt} kernel threads per run_cells "
      f"job); 30 FedEPM runs in "
      f"results/fedepm/fig3.summary.parquet and figures/fedepm/fig2.pdf; Snakemake wall time {wall} s")
PYEOF
log "for the record, sacct on this cluster: $(sacct -X -n -j 1 2>&1 | head -1)"
