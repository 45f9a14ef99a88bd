"""Command line: run one algorithm on your own data, list what the package offers.

    fedrepro run --algorithm fedadmm --problem logreg --data mine.npz \\
        --param r0=0.2 --k0 10 --rho 0.5 --rounds 200 --seed 1 --out run.parquet
    fedrepro run ... --replay-selections sel.csv --replay-noise noise.npy
    fedrepro run ... --record-selections sel.csv
    fedrepro run --algorithm fedavg_sgd --problem mlp1 --problem-param dataset=mnist \
        --problem-param m=100 --param E=5 --param B=50 --rho 0.1 --rounds 10 --out run.parquet
    fedrepro list

The ``.npz`` holds ``X`` (n_samples, n_features), ``y`` (n_samples,) and ``client``
(n_samples,) integer client ids 0..m-1 (``client_ids`` is accepted as an alias); for
``softmax`` and neural models optionally ``X_test``/``y_test`` (:mod:`fedrepro.problems.user_data`).
A neural model (``--problem neural --problem-param model=mlp1``, or the model name itself:
``--problem mlp1``) runs either on such an npz (X rows of the model's input size) or, without
``--data``, on a registry image dataset (``--problem-param dataset=mnist``, m, partition ...: the
spec keys of :func:`fedrepro.problems.neural.build_neural`) read from ``--data-dir`` (processed
npz) or else from the raw files in the cache / ``FEDREPRO_DATA_MIRROR``. The flags make a run spec
(:meth:`fedrepro.experiments.spec.RunSpec.from_cli`), and the run is built by
:func:`fedrepro.experiments.runner.build_run` and completed by :func:`~fedrepro.experiments.runner.complete_run`,
the path every workflow cell takes (``RunSpec.from_cell`` -> ``run_cell``); the problem is built by the
registry's ``linreg`` / ``softmax`` / ``neural`` builders.
``--replay-selections`` / ``--replay-noise`` replace the run's client sampling / unit-scale
noise by another implementation's (formats: :mod:`fedrepro.sim.replay`, README); a replayed round's
clients keep the file's order. ``--record-selections`` writes the run's own selections (sampled or
replayed) in that format, in the order the run used them, so that the run can be replayed by itself.
"""
from __future__ import annotations

import argparse
import os
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
        parsed = yaml.safe_load(value)
        if isinstance(parsed, str):         # YAML 1.1 reads 1e4 as a string; a number is meant
            try:
                parsed = float(parsed) if parsed.strip().lower() not in ("nan", "inf", "-inf", "+inf") else parsed
            except ValueError:
                pass
        out[key.strip()] = parsed
    return out


def npz_kinds() -> dict:
    """``{--problem KIND: (registration, UserData)}``: the kinds a registered problem runs on a user's npz
    (:class:`fedrepro.problems.registry.UserData`)."""
    from fedrepro.problems.registry import cli_kinds

    return {kind: (spec, form) for kind, (spec, form, options) in cli_kinds().items() if form is not None and not options}


def npz_problem_spec(kind: str, path: str | Path, options: dict, default_weights: str | None = None) -> dict:
    """The ``problem`` block of ``--problem KIND --data PATH`` (the registration's npz form, built by its
    builder, :mod:`fedrepro.problems.user_data`). ``default_weights="ones"``: client weights 1
    (f = sum_i f_i) unless ``options`` has ``weights``, for the forms whose weights follow the algorithm;
    None: the problem's default (1/m)."""
    kinds = npz_kinds()
    if kind not in kinds:
        raise SystemExit(f"error: --problem {kind!r} is not allowed; choose one of {sorted(kinds)}")
    form = kinds[kind][1]
    spec = {**form.block, "data": str(path), **options}
    if default_weights and "weights" not in options and form.weights_follow_algorithm:
        spec["weights"] = default_weights
    return spec


def problem_from_npz(kind: str, path: str | Path, options: dict, default_weights: str | None = None):
    """The problem of ``--problem KIND --data PATH`` (see :func:`npz_problem_spec`)."""
    from fedrepro.problems import build_problem

    try:
        return build_problem(npz_problem_spec(kind, path, options, default_weights), 0)
    except ValueError as err:
        raise SystemExit(f"error: {err}")


def cli_problems() -> list[str]:
    """What ``--problem`` accepts: every registered problem's npz kinds (linreg, logreg, softmax, neural)
    and aliases (every model name)."""
    from fedrepro.problems.registry import cli_kinds

    return list(cli_kinds())


def cli_spec(args, options: dict, default_weights):
    """The run the flags describe: :meth:`fedrepro.experiments.spec.RunSpec.from_cli`, the constructor beside
    the workflow's :meth:`~fedrepro.experiments.spec.RunSpec.from_cell`."""
    from fedrepro.experiments.spec import RunSpec

    def block(name, params, flag):
        return {"name": name, **_kv(params, flag)} if name else None

    return RunSpec.from_cli(
        algorithm=args.algorithm, params=_kv(args.param, "--param"), seed=args.seed, k0=args.k0, rho=args.rho,
        max_rounds=args.rounds, eval_every=args.eval_every,
        metrics=args.metrics.split(",") if args.metrics else None,
        stop={"rule": args.stop, **_kv(args.stop_param, "--stop-param")},
        mechanism=block(args.mechanism, args.mechanism_param, "--mechanism-param"),
        attack=block(args.attack, args.attack_param, "--attack-param"),
        store=args.store or None, sample_count=args.sample_count or None,
        problem=(npz_problem_spec(args.problem, args.data, options, default_weights) if args.data
                 else {"name": args.problem, **options}))


def cli_cell(args, options: dict, default_weights) -> dict:
    """The cell dict of the flags' run (:func:`cli_spec`), as the workflow's files carry a cell."""
    return cli_spec(args, options, default_weights).to_dict()


def _set_threads(n: int) -> None:
    """Kernel threads for this run: 1 .. the cores numba was started with (never more: no oversubscription)."""
    import numba

    top = numba.config.NUMBA_NUM_THREADS
    if not 1 <= n <= top:
        raise SystemExit(f"error: --threads {n} is not allowed: give 1 to {top} (the cores numba may use here; "
                         "NUMBA_NUM_THREADS caps it)")
    from fedrepro.core.threads import set_kernel_threads

    set_kernel_threads(n)


def check_output_path(out: str, flag: str = "--out", kind: str = "a .parquet file") -> Path:
    """An output file (``--out``, ``--record-selections``) before any work: not a folder, its folder
    exists (no file in the way) and is writable."""
    path = Path(out)
    if path.is_dir():
        raise SystemExit(f"error: {flag} {out} is a folder; name {kind}")
    parent = path.parent if str(path.parent) else Path(".")
    for anc in [parent, *parent.parents]:
        if anc.exists() and not anc.is_dir():
            raise SystemExit(f"error: {flag} {out}: {anc} is a file, not a folder")
    if not parent.exists():
        raise SystemExit(f"error: {flag} {out}: folder {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK):
        raise SystemExit(f"error: {flag} {out}: folder {parent} is not writable")
    return path


def check_record_path(args) -> None:
    """``--record-selections`` before any work: a writable file that is neither ``--out`` nor the
    replayed selections (the run's input and its provenance)."""
    record = check_output_path(args.record_selections, "--record-selections", "a .csv file")
    for flag, other in (("--out", args.out), ("--replay-selections", args.replay_selections)):
        if other is not None and record.resolve() == Path(other).resolve():
            raise SystemExit(f"error: --record-selections {args.record_selections} is also {flag}; name another file")


def cmd_run(args) -> int:
    from fedrepro.algorithms import make_algorithm
    from fedrepro.data.fetch import sha256_file
    from fedrepro.algorithms.pairing import check_pairing
    from fedrepro.sim.replay import ReplayError, load_replay, write_selections
    from fedrepro.experiments.results import provenance, write_parquet
    from fedrepro.experiments.runner import build_run, complete_run, progress_printer

    check_output_path(args.out)
    if args.record_selections is not None:
        check_record_path(args)
    if args.threads is not None:
        _set_threads(args.threads)
    try:        # the algorithm decides the default client weights of the npz problem
        algorithm = make_algorithm(args.algorithm, **_kv(args.param, "--param"))
    except (ValueError, TypeError) as err:
        raise SystemExit(f"error: {err}")
    default_weights = getattr(algorithm, "objective_weights", None)
    flags = [f for f, v in (("--record-selections", args.record_selections),
                            ("--replay-selections", args.replay_selections), ("--replay-noise", args.replay_noise)) if v]
    if algorithm.asynchronous and flags:
        raise SystemExit(f"error: {' and '.join(flags)}: algorithm {args.algorithm!r} is asynchronous (its workers "
                         "report as they finish): it has no rounds' client selections to record or replay; "
                         "these options are for synchronous algorithms")
    options = _kv(args.problem_param, "--problem-param")
    if "weights" in options:
        default_weights = None
    from fedrepro.problems.registry import cli_kinds, resolve

    registration, form, implied = cli_kinds()[args.problem]
    for key, value in implied.items():                 # --problem mlp1 = neural with model=mlp1
        if options.setdefault(key, value) != value:
            raise SystemExit(f"error: --problem {args.problem} and --problem-param {key}={options[key]} "
                             "disagree; give one of them")
    if implied:
        args.problem = registration.name
    if form is None or not form.weights_follow_algorithm:
        default_weights = None                         # e.g. neural: weights "uniform" unless given
    if args.data is None and registration.without_data is None:
        raise SystemExit(f"error: --problem {args.problem} needs --data (npz with X, y, client)")
    spec = cli_spec(args, options, default_weights)     # the run, as the workflow's cells are
    prebuilt = None                     # e.g. a registry dataset read from the cache / mirror (no --data)
    if args.data is None:
        try:
            prebuilt = resolve(registration.without_data)(options, args.seed, args.data_dir)
        except (ValueError, FileNotFoundError, OSError) as err:
            raise SystemExit(f"error: {err}")
    try:
        replay = load_replay(args.replay_selections, args.replay_noise)
        run = build_run(spec, data_dir=None, replay=replay, problem=prebuilt,   # the registry builds the npz problem
                        record_selections=args.record_selections is not None)
        problem = run.problem
        if replay is not None:          # before any work: a clear error naming the file
            replay.check(problem.m, problem.dim, args.rounds)
        check_pairing(run.algorithm, run.problem)   # simulate checks it too; here it is a clean error
        problem.check_metrics(spec.run.metrics)  # --metrics names what the problem records
    except (ValueError, TypeError, KeyError) as err:
        raise SystemExit(f"error: {err}")
    try:
        result, df = complete_run(spec, run, progress=None if args.quiet else progress_printer(sys.stderr, 2.0))
    except ReplayError as err:             # e.g. too few noise rows for the round the run reached
        raise SystemExit(f"error: {err}")
    replayed = {k: {"file": str(v), "sha256": sha256_file(v)}
                for k, v in (("selections", args.replay_selections), ("noise", args.replay_noise)) if v}
    recorded = {}
    if run.recorder is not None:        # the selections the run used, in its order (replayable by itself)
        selections = run.recorder.selections
        write_selections(args.record_selections, selections)
        recorded = {"recorded": {"selections": {"file": str(args.record_selections), "rounds": len(selections),
                                                "sha256": sha256_file(args.record_selections)}}}
    write_parquet(df, args.out, provenance(cli=" ".join(sys.argv[1:]), **({"replay": replayed} if replayed else {}),
                                           **recorded))
    shown = ", ".join(f"{k}={result.final[k]:.10g}" for k in problem.check_metrics(spec.run.metrics))
    print(f"{args.algorithm}: status={result.status} ({result.stop_reason}), rounds={result.rounds}, "
          f"{shown}, wall={result.wall_time:.2f}s -> {args.out}")
    if "objective" in df and result.status != "diverged":   # the runner stops only at diverge_factor
        from fedrepro.figures.divergence import growth_note
        note = growth_note(df.sort_values("round")["objective"])
        if note:
            print(f"warning: {note}")
    if "replay_noise_rows" in result.info:
        used, supplied = result.info["replay_noise_rows"]
        print(f"replayed noise: used {used} of the {supplied} rows of {args.replay_noise}")
    if run.recorder is not None:
        R = recorded["recorded"]["selections"]["rounds"]
        rows = sum(len(c) for c in selections.values())
        hint = (f"; it covers {R} rounds: replay it with --rounds {R} or fewer" if R < args.rounds else "")
        span = f"rounds 0..{R - 1}" if R else "no round (the run performed none)"
        print(f"recorded selections: {rows} rows, {span} -> {args.record_selections}{hint}")
    return 0


def cmd_list(args) -> int:
    from fedrepro.algorithms import algorithm_names
    from fedrepro.data import DATASETS, partition
    from fedrepro.papers.registry import PAPERS
    from fedrepro.problems import problem_names
    from fedrepro.sim.attacks import ATTACKS
    from fedrepro.sim.privacy import MECHANISMS
    from fedrepro.sim.stopping import STOP_RULES

    if args.params is not None:
        from fedrepro.experiments.reference import entry_text, lookup, reference
        try:
            entries = lookup(args.params) if args.params else reference()
        except ValueError as e:
            print(f"fedrepro list --params: {e}", file=sys.stderr)
            return 2
        print("\n".join(entry_text(e) for e in entries), end="")
        return 0
    print("papers:       " + ", ".join(PAPERS) + "  (snakemake -j N <paper>)")
    print("algorithms:   " + ", ".join(algorithm_names()))
    print("problems:     " + ", ".join(problem_names()) + f"  (CLI --problem: {', '.join(cli_problems())})")
    print("datasets:     " + ", ".join(f"{n} [{', '.join(s.variants)}]" for n, s in sorted(DATASETS.items())))
    print("partitioners: " + ", ".join(sorted(partition.PARTITIONERS)))
    print("stop rules:   " + ", ".join(sorted(STOP_RULES)))
    print("mechanisms:   " + ", ".join(sorted(MECHANISMS)))
    print("attacks:      " + ", ".join(sorted(ATTACKS)))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fedrepro", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one algorithm on your own data (npz with X, y, client) or an image dataset")
    run.add_argument("--algorithm", required=True)
    run.add_argument("--problem", required=True, choices=cli_problems(),
                     help="linreg, logreg, softmax, or a neural model (neural with model=..., or the model name)")
    run.add_argument("--data", help="npz with X, y, client (and optionally X_test, y_test); neural models "
                                    "without it use --problem-param dataset=<registry name> (default mnist)")
    run.add_argument("--data-dir", default="data/processed", help="processed datasets (neural without --data)")
    run.add_argument("--store", choices=["dense", "lazy", "memmap", "auto"], help="per-client state store")
    run.add_argument("--sample-count", choices=["ceil", "floor"],
                     help="clients per round: ceil(rho m) (default) or max(floor(rho m), 1)")
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
                     help="clients per round from a CSV 'round,client' (0-based; rounds 0..R-1, R >= --rounds; "
                          "a round's clients are used in the order its rows come)")
    run.add_argument("--replay-noise", metavar="NPY",
                     help="(N, n) unit-scale noise rows consumed in call order instead of the init/noise streams")
    run.add_argument("--record-selections", metavar="CSV",
                     help="write the run's client selections (sampled or replayed) as a 'round,client' CSV, in "
                          "the order used: --replay-selections replays the run (synchronous algorithms)")
    run.add_argument("--out", required=True, help="output Parquet file (results schema)")
    run.add_argument("--threads", type=int, metavar="N",
                     help="threads of the compiled convex-problem kernels (default: every core numba sees, "
                          "NUMBA_NUM_THREADS; BLAS threads follow OPENBLAS_NUM_THREADS / OMP_NUM_THREADS)")
    run.add_argument("--quiet", action="store_true")
    run.set_defaults(func=cmd_run)
    lst = sub.add_parser("list", help="algorithms, problems, datasets, partitioners ...")
    lst.add_argument("--params", nargs="?", const="", default=None, metavar="NAME",
                     help="the parameters of NAME (an algorithm, problem, partition, attack, mechanism, aggregator, "
                          "stop rule or metric) with types, allowed values and defaults; without NAME, of all "
                          "(docs/parameters.md)")
    lst.set_defaults(func=cmd_list)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
