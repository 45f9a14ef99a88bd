"""Command line: run one algorithm on your own data, list what the package offers.

    fedrepro run --algorithm fedadmm --problem logreg --data mine.npz \\
        --param r0=0.2 --k0 10 --rho 0.5 --rounds 200 --seed 1 --out run.parquet
    fedrepro run ... --replay-selections sel.csv --replay-noise noise.npy
    fedrepro list

The ``.npz`` holds ``X`` (n_samples, n_features), ``y`` (n_samples,) and ``client``
(n_samples,) integer client ids 0..m-1 (``client_ids`` is accepted as an alias); for
``softmax`` optionally ``X_test``/``y_test`` (:mod:`fedrepro.problems.user_data`). The flags make
a cell, and the run is built by :func:`fedrepro.experiments.runner.build_run`, the path every
workflow cell takes (the problem by the registry's ``linreg`` / ``softmax`` builders).
``--replay-selections`` / ``--replay-noise`` replace the run's client sampling / unit-scale
noise by another implementation's (formats: :mod:`fedrepro.sim.replay`, README).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from fedrepro.core.context import RUN_DEFAULTS


def _kv(pairs, what: str) -> dict:
    out = {}
    for pair in pairs or []:
        if "=" not in pair:
            raise SystemExit(f"error: {what} {pair!r} must look like key=value")
        key, value = pair.split("=", 1)
        out[key.strip()] = yaml.safe_load(value)
    return out


NPZ_PROBLEMS = {"linreg": {"name": "linreg", "loss": "squared"}, "logreg": {"name": "linreg", "loss": "logistic"},
                "softmax": {"name": "softmax"}}


def npz_problem_spec(kind: str, path: str | Path, options: dict, default_weights: str | None = None) -> dict:
    """The ``problem`` block of ``--problem KIND --data PATH`` (built by the registry's builders,
    :mod:`fedrepro.problems.user_data`). ``default_weights="ones"``: client weights 1 (f = sum_i f_i)
    unless ``options`` has ``weights``; None: the problem's default (1/m)."""
    if kind not in NPZ_PROBLEMS:
        raise SystemExit(f"error: --problem {kind!r} is not allowed; choose one of {sorted(NPZ_PROBLEMS)}")
    spec = {**NPZ_PROBLEMS[kind], "data": str(path), **options}
    if default_weights and "weights" not in options and kind != "softmax":
        spec["weights"] = default_weights
    return spec


def problem_from_npz(kind: str, path: str | Path, options: dict, default_weights: str | None = None):
    """The problem of ``--problem KIND --data PATH`` (see :func:`npz_problem_spec`)."""
    from fedrepro.problems import build_problem

    try:
        return build_problem(npz_problem_spec(kind, path, options, default_weights), 0)
    except ValueError as err:
        raise SystemExit(f"error: {err}")


def cli_cell(args, options: dict, default_weights) -> dict:
    """The cell the flags describe (the same spec a workflow sweep cell is)."""
    def block(name, params, flag):
        return {"name": name, **_kv(params, flag)} if name else None

    return {"paper": "custom", "experiment": "cli", "cell": "cli", "algorithm": args.algorithm,
            "params": _kv(args.param, "--param"), "seed": args.seed, "instance": 0, "k0": args.k0,
            "rho": args.rho, "max_rounds": args.rounds, "eval_every": args.eval_every,
            **({"metrics": args.metrics.split(",")} if args.metrics else {}),
            "stop": {"rule": args.stop, **_kv(args.stop_param, "--stop-param")},
            "mechanism": block(args.mechanism, args.mechanism_param, "--mechanism-param"),
            "attack": block(args.attack, args.attack_param, "--attack-param"),
            "problem": npz_problem_spec(args.problem, args.data, options, default_weights)}


def cmd_run(args) -> int:
    from fedrepro.algorithms import make_algorithm
    from fedrepro.data.fetch import sha256_file
    from fedrepro.problems.protocols import check_pairing
    from fedrepro.sim.replay import ReplayError, load_replay
    from fedrepro.experiments.results import provenance, run_frame, write_parquet
    from fedrepro.experiments.runner import build_run, progress_printer

    try:        # the algorithm decides the default client weights of the npz problem
        default_weights = getattr(make_algorithm(args.algorithm, **_kv(args.param, "--param")),
                                  "objective_weights", None)
    except (ValueError, TypeError) as err:
        raise SystemExit(f"error: {err}")
    options = _kv(args.problem_param, "--problem-param")
    if "weights" in options:
        default_weights = None
    cell = cli_cell(args, options, default_weights)
    try:
        replay = load_replay(args.replay_selections, args.replay_noise)
        run = build_run(cell, data_dir=None, replay=replay)     # the registry builds the npz problem
        problem = run.problem
        if replay is not None:          # before any work: a clear error naming the file
            replay.check(problem.m, problem.dim, args.rounds)
        check_pairing(run.algorithm, run.problem)   # simulate checks it too; here it is a clean error
    except (ValueError, TypeError) as err:
        raise SystemExit(f"error: {err}")
    try:
        result = run.simulate(progress=None if args.quiet else progress_printer(sys.stderr, 2.0))
    except ReplayError as err:             # e.g. too few noise rows for the round the run reached
        raise SystemExit(f"error: {err}")
    df = run_frame(cell, result, problem.describe(), run.algorithm.params())
    replayed = {k: {"file": str(v), "sha256": sha256_file(v)}
                for k, v in (("selections", args.replay_selections), ("noise", args.replay_noise)) if v}
    write_parquet(df, args.out, provenance(cli=" ".join(sys.argv[1:]), **({"replay": replayed} if replayed else {})))
    print(f"{args.algorithm}: status={result.status} ({result.stop_reason}), rounds={result.rounds}, "
          f"objective={result.final['objective']:.10g}, wall={result.wall_time:.2f}s -> {args.out}")
    if "replay_noise_rows" in result.info:
        used, supplied = result.info["replay_noise_rows"]
        print(f"replayed noise: used {used} of the {supplied} rows of {args.replay_noise}")
    return 0


def cmd_list(args) -> int:
    from fedrepro.algorithms import algorithm_names
    from fedrepro.data import DATASETS, partition
    from fedrepro.experiments.cells import PAPERS
    from fedrepro.problems import problem_names
    from fedrepro.sim.attacks import ATTACKS
    from fedrepro.sim.privacy import MECHANISMS
    from fedrepro.sim.stopping import STOP_RULES

    print("papers:       " + ", ".join(PAPERS) + "  (snakemake -j N <paper>)")
    print("algorithms:   " + ", ".join(algorithm_names()))
    print("problems:     " + ", ".join(problem_names()) + "  (CLI --problem: linreg, logreg, softmax)")
    print("datasets:     " + ", ".join(f"{n} [{', '.join(s.variants)}]" for n, s in sorted(DATASETS.items())))
    print("partitioners: " + ", ".join(sorted(partition.PARTITIONERS)))
    print("stop rules:   " + ", ".join(sorted(STOP_RULES)))
    print("mechanisms:   " + ", ".join(sorted(MECHANISMS)))
    print("attacks:      " + ", ".join(sorted(ATTACKS)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fedrepro", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one algorithm on your own data (npz with X, y, client)")
    run.add_argument("--algorithm", required=True)
    run.add_argument("--problem", required=True, choices=["linreg", "logreg", "softmax"])
    run.add_argument("--data", required=True, help="npz with X, y, client (and optionally X_test, y_test)")
    run.add_argument("--param", action="append", metavar="KEY=VALUE", help="algorithm parameter (repeatable)")
    run.add_argument("--problem-param", action="append", metavar="KEY=VALUE",
                     help="e.g. lam=0.001; weights default to 1/m, or to 1 (f = sum_i f_i) for fedepm, "
                          "sfedavg and sfedprox as in their paper")
    run.add_argument("--k0", type=int, default=RUN_DEFAULTS["k0"], help="local iterations per round")
    run.add_argument("--rho", type=float, default=RUN_DEFAULTS["rho"], help="participation rate, in (0, 1]")
    run.add_argument("--rounds", type=int, default=RUN_DEFAULTS["max_rounds"], help="round cap")
    run.add_argument("--eval-every", type=int, default=RUN_DEFAULTS["eval_every"])
    run.add_argument("--metrics", help="comma-separated metrics to evaluate (default: all the problem has)")
    run.add_argument("--stop", default="none", help="stop rule (see `fedrepro list`)")
    run.add_argument("--stop-param", action="append", metavar="KEY=VALUE")
    run.add_argument("--mechanism", help="privacy mechanism applied to uploads")
    run.add_argument("--mechanism-param", action="append", metavar="KEY=VALUE")
    run.add_argument("--attack", help="Byzantine attack")
    run.add_argument("--attack-param", action="append", metavar="KEY=VALUE")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--replay-selections", metavar="CSV",
                     help="clients per round from a CSV 'round,client' (0-based; rounds 0..R-1, R >= --rounds)")
    run.add_argument("--replay-noise", metavar="NPY",
                     help="(N, n) unit-scale noise rows consumed in call order instead of the init/noise streams")
    run.add_argument("--out", required=True, help="output Parquet file (results schema)")
    run.add_argument("--quiet", action="store_true")
    run.set_defaults(func=cmd_run)
    lst = sub.add_parser("list", help="algorithms, problems, datasets, partitioners ...")
    lst.set_defaults(func=cmd_list)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
