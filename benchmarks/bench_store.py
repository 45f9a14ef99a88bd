"""Per-client state of many large clients: resident memory of ``store: auto`` (issue #11).

The FedADMM Option I shape at paper scale (spec 003 §8.2): m = 1000 clients x CNN 1
(1,663,370 parameters), two per-client vectors (w_i, y_i) -- 26.6 GB as dense float64,
13.3 GB as float32. A stand-in algorithm keeps exactly that state (two ``ctx.client_store``
stores) and, every round, reads the rows of the selected clients, changes them and writes them
back (what local training does to them), on a problem that does no training (the point is the
state, not the arithmetic). With ``store: auto`` and the default budget (4096 MiB) the run
resolves to the memmap store; the benchmark reports the process's peak anonymous resident
memory (``RssAnon`` of /proc/self/status, sampled every round: the memory a second job
cannot get; the memmap's file pages are page cache the kernel can drop) against the estimate
:func:`fedrepro.core.store.run_memory_bytes` that Snakemake's ``mem_mb`` is declared from.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/bench_store.py [--m 1000] [--rounds 3] [--rho 0.1]
    .venv/bin/python benchmarks/bench_store.py --tiny    # seconds: m = 20, dim = 10,000, budget 1 MiB (test suite)

Writes rounds x 2 x rho m rows (1.33 GB per round at the defaults) to a temporary file. Prints the
BLAS library, kernel and threads it ran with (:mod:`fedrepro.core.blas`).
"""
from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np

from fedrepro.algorithms.base import State
from fedrepro.algorithms.sync_base import SyncAlgorithm
from fedrepro.core.blas import blas_record, describe
from fedrepro.core.sampling import participants
from fedrepro.core.store import ClientStore, resolve_store, run_memory_bytes
from fedrepro.problems.base import FederatedProblem
from fedrepro.sim.loop import simulate

CNN1 = 1_663_370


def rss_anon_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return float("nan")


class Untrained(FederatedProblem):
    """m clients, dim parameters, no data (losses 0): only the state is exercised."""

    name = "untrained"

    def __init__(self, m, dim):
        self.m, self.dim = m, dim
        self.client_sizes = np.ones(m, dtype=np.int64)
        self.weights = np.full(m, 1.0 / m)

    def client_losses(self, W, clients=None):
        return np.zeros(len(self._clients(clients, self.m)))

    def client_grads(self, W, clients=None):
        raise NotImplementedError


@dataclass(slots=True)
class TwoVectorState(State):
    Wi: ClientStore = None
    Yi: ClientStore = None
    peak_anon_mb: float = 0.0


@dataclass
class TwoVectors(SyncAlgorithm):
    """Keeps w_i and y_i per client (FedADMM Option I's state) and touches the selected rows."""

    name = "two_vectors"
    client_vectors = 2
    state_class = TwoVectorState

    def init(self, problem, ctx):
        st = TwoVectorState(w=np.zeros(problem.dim, dtype=np.float32))
        st.Wi = ctx.client_store(problem.m, problem.dim, dtype=np.float32)
        st.Yi = ctx.client_store(problem.m, problem.dim, dtype=np.float32)
        return st

    def aggregate(self, state, problem, ctx, r):
        state.peak_anon_mb = max(state.peak_anon_mb, rss_anon_mb())
        state.metrics["peak_anon_mb"] = state.peak_anon_mb
        return state.w

    def client_update(self, state, problem, ctx, clients, r):
        W = state.Wi[clients]                    # (S, dim) float32: the round's working set
        W += state.w
        W += np.float32(0.01)
        state.Yi[clients] = state.Yi[clients] + W
        state.Wi[clients] = W
        state.peak_anon_mb = max(state.peak_anon_mb, rss_anon_mb())
        return W

    def receive(self, state, problem, ctx, clients, uploads, r):
        state.w = uploads.mean(axis=0, dtype=np.float64).astype(np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--m", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=CNN1)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--rho", type=float, default=0.1)
    ap.add_argument("--budget-mb", type=float, default=4096)
    ap.add_argument("--tiny", action="store_true", help="m = 20 clients of 10,000 parameters, 2 rounds, a 1 MiB "
                    "budget (so that the memmap store is still taken): what the test suite runs")
    args = ap.parse_args()
    if args.tiny:
        args.m, args.dim, args.rounds, args.rho, args.budget_mb = 20, 10_000, 2, 0.5, 1.0
    print(describe(), flush=True)
    problem, alg = Untrained(args.m, args.dim), TwoVectors()
    kind = resolve_store("auto", args.m, args.dim, 2, args.budget_mb)
    est = run_memory_bytes(m=args.m, dim=args.dim, vectors=2, clients_per_round=participants(args.m, args.rho),
                           store="auto", budget_mb=args.budget_mb)
    base = rss_anon_mb()
    t = time.perf_counter()
    res = simulate(problem, alg, rho=args.rho, max_rounds=args.rounds, seed=0, store="auto",
                   store_budget_mb=args.budget_mb, metrics=["objective"])
    wall = time.perf_counter() - t
    dense_gb = 2 * args.m * args.dim * 8 / 2**30
    print(f"m={args.m} dim={args.dim:,} 2 vectors/client: dense float64 would be {dense_gb:.1f} GiB; "
          f"store auto (budget {args.budget_mb:g} MiB) -> {res.info.get('store', 'dense')} (resolve_store: {kind})")
    print(f"{args.rounds} rounds, {participants(args.m, args.rho)} clients/round, wall {wall:.1f} s; "
          f"anonymous RSS before the run {base:.0f} MiB, peak during it {alg_peak(res, base):.0f} MiB; "
          f"estimate (run_memory_bytes, without the interpreter) {est / 2**20:.0f} MiB")
    print("machine:", blas_record())


def alg_peak(res, base):
    return max([r.get("peak_anon_mb", base) for r in res.trace] + [base])


if __name__ == "__main__":
    main()
