"""Replayed selections keep their order (issue #41): a round's clients reach the run in the order the
file (or the dict given to Replay) lists them, everything that consumes ``ctx.clients(r)`` works with
ids in any order, whatever is drawn per client by position follows that order, and a run records
the selections it used (``--record-selections``) so that it can be replayed by itself."""
import numpy as np
import pandas as pd
import pytest

from fedrepro.algorithms import make_algorithm
from fedrepro.algorithms._mixture import client_rows, rows_for_clients
from fedrepro.core.context import RunContext
from fedrepro.core.rng import stream
from fedrepro.core.sampling import RecordingSampler, UniformSampler, sample_clients
from fedrepro.core.store import make_store
from fedrepro.sim.loop import simulate
from fedrepro.sim.privacy import build_mechanism
from fedrepro.sim.replay import Replay, ReplayError, load_replay, load_selections, write_selections
from tests.toys import Quadratic, RecordingGD, softmax_toy, worker_blobs

TIMES = ("wall_time", "cpu_time", "local_time", "local_cpu_time")


def _write(path, rows):
    path.write_text("round,client\n" + "".join(f"{r},{i}\n" for r, i in rows))
    return path


def _permuted(sorted_sel: dict, seed=0) -> dict:
    """Every round's clients in a random order (at least one round not ascending)."""
    rng = np.random.default_rng(seed)
    out = {r: c[rng.permutation(len(c))] for r, c in sorted_sel.items()}
    assert any(not np.array_equal(out[r], np.sort(out[r])) for r in out)
    return out


def _sampled(m, rho, seed, rounds) -> dict:
    return {r: sample_clients(m, rho, seed, r) for r in range(rounds)}


def _objectives(res):
    return np.array([t["objective"] for t in res.trace])


# ---- the order a file or a dict gives is the order the run sees ------------------------------------------
def test_a_rounds_clients_come_in_the_files_order(tmp_path):
    path = _write(tmp_path / "sel.csv", [(0, 3), (1, 2), (0, 1), (1, 7), (1, 0), (2, 6), (1, 5), (2, 4)])
    assert {r: c.tolist() for r, c in load_selections(path).items()} == {0: [3, 1], 1: [2, 7, 0, 5], 2: [6, 4]}
    seen = []

    class Spy(RecordingGD):
        def client_update(self, state, problem, ctx, clients, r):
            seen.append((ctx.clients(r).tolist(), list(clients)))
            return super().client_update(state, problem, ctx, clients, r)

    alg = Spy()
    simulate(Quadratic.random(m=8), alg, rho=0.5, max_rounds=3, seed=0, replay=load_replay(path))
    assert alg.log == ["init", (0, [3, 1]), (1, [2, 7, 0, 5]), (2, [6, 4])]
    assert seen == [([3, 1], [3, 1]), ([2, 7, 0, 5], [2, 7, 0, 5]), ([6, 4], [6, 4])]
    # a dict given to Replay: the same, and a copy each time
    replay = Replay(selections={0: [2, 7, 0, 5], 1: np.array([1])})
    assert replay.clients(0).tolist() == [2, 7, 0, 5]
    replay.clients(0)[0] = 99
    assert replay.clients(0).tolist() == [2, 7, 0, 5]


def test_a_client_twice_in_a_round_stays_an_error(tmp_path):
    with pytest.raises(ReplayError, match="round 0 must select distinct clients"):
        Replay(selections={0: [5, 2, 5]})
    with pytest.raises(ReplayError, match=r"line 4: duplicate row round=0, client=5 \(first on line 2\)"):
        load_selections(_write(tmp_path / "sel.csv", [(0, 5), (0, 2), (0, 5)]))
    # unsorted ids are checked against m by value, not by the ends of the array
    with pytest.raises(ReplayError, match=r"line 3 \(round=0, client=9\): client ids must be in 0..5"):
        simulate(Quadratic.random(m=6), RecordingGD(), max_rounds=1,
                 replay=load_replay(_write(tmp_path / "big.csv", [(0, 1), (0, 9), (0, 2)])))


def test_a_round_the_file_lacks_is_a_replay_error():
    replay = Replay(selections={0: [1, 0], 1: [2]}, sources={"selections": "replay selections file s.csv"})
    with pytest.raises(ReplayError, match="s.csv covers rounds 0..1, but the run asked for the clients of round 2"):
        replay.clients(2)


# ---- order-invariant work: the permuted replay gives the sorted replay's result ---------------------------
def test_weighted_mean_fedavg_is_order_invariant():
    """FedAvg's server average over the round's clients (weights of the selected, eq. (17)) does not
    depend on their order: a permuted replay ends where the sorted one does (up to rounding)."""
    P, rounds = softmax_toy(), 6
    sel = _sampled(P.m, 0.5, 1, rounds)
    perm = _permuted(sel)

    def run(selections):
        return simulate(P, make_algorithm("fedavg", averaging="selected", step_c=0.5), k0=3, rho=0.5,
                        max_rounds=rounds, seed=1, replay=Replay(selections=selections))

    a, b = run(sel), run(perm)
    np.testing.assert_allclose(_objectives(b), _objectives(a), rtol=1e-12)
    np.testing.assert_allclose(b.w, a.w, rtol=1e-10, atol=1e-14)
    # and the sorted replay is the default sampler's run, bit for bit
    own = simulate(P, make_algorithm("fedavg", averaging="selected", step_c=0.5), k0=3, rho=0.5,
                   max_rounds=rounds, seed=1)
    np.testing.assert_array_equal(own.w, a.w)


@pytest.mark.parametrize("store", ["dense", "lazy", "memmap"])
def test_client_stores_take_unsorted_ids(store):
    """Rows written and read by unsorted ids land on the right clients (a lazy store allocates new
    rows by id), and a run keeping every client's iterate (FedAvg eq. (18)) gives the same numbers
    sorted or permuted under each store."""
    m, dim = 7, 3
    S = make_store(store, m, dim, fill=0.5)
    rows = np.arange(12, dtype=float).reshape(4, 3)
    S[np.array([5, 0, 3, 1])] = rows
    np.testing.assert_array_equal(S[np.array([1, 3, 0, 5])], rows[[3, 2, 1, 0]])
    np.testing.assert_array_equal(S[np.array([6, 5])], [[0.5] * 3, rows[0]])
    S[np.array([6, 3])] = -S[np.array([6, 3])]
    full = S.to_array()
    np.testing.assert_array_equal(full[[0, 1, 2, 3, 4, 5, 6]],
                                  [rows[1], rows[3], [0.5] * 3, -rows[2], [0.5] * 3, rows[0], [-0.5] * 3])
    P, rounds = softmax_toy(), 5
    sel = _sampled(P.m, 0.5, 2, rounds)

    def run(selections):
        return simulate(P, make_algorithm("fedavg", averaging="all"), k0=2, rho=0.5, max_rounds=rounds, seed=2,
                        store=store, replay=Replay(selections=selections))

    a, b = run(sel), run(_permuted(sel, seed=3))
    np.testing.assert_array_equal(_objectives(b), _objectives(a))      # per-client work, stored by id
    np.testing.assert_array_equal(b.w, a.w)


# ---- order-dependent work follows the replayed order ----------------------------------------------------
def _epm(P, replay, rounds):
    return simulate(P, make_algorithm("fedepm"), k0=2, rho=0.5, max_rounds=rounds, seed=0, replay=replay,
                    mechanism=build_mechanism({"name": "laplace_epm", "epsilon": 1.0}))


def test_replayed_noise_rows_go_to_the_clients_in_the_order_selected():
    """laplace_epm takes one replayed row per client of the round in the order the clients were
    selected: a permuted replay equals the sorted replay whose rows are permuted the same way, and
    differs from the sorted replay with the rows as they are."""
    P, rounds = Quadratic.random(m=8, dim=4, seed=3), 5
    sel = _sampled(P.m, 0.5, 4, rounds)
    perm = _permuted(sel, seed=5)
    noise = np.random.default_rng(6).standard_normal((P.m + sum(len(c) for c in sel.values()), P.dim))
    blocks, k = [noise[:P.m]], P.m                     # the initial m rows, then a block per round
    for r in range(rounds):
        block = noise[k:k + len(perm[r])]
        blocks.append(block[np.argsort(perm[r])])      # sorted client S[j] gets the row perm gave it
        k += len(perm[r])
    matched = np.vstack(blocks)
    a = _epm(P, Replay(selections=perm, noise=noise), rounds)
    b = _epm(P, Replay(selections=sel, noise=matched), rounds)
    c = _epm(P, Replay(selections=sel, noise=noise), rounds)
    np.testing.assert_allclose(_objectives(a), _objectives(b), rtol=1e-12)
    np.testing.assert_allclose(a.w, b.w, rtol=1e-12, atol=1e-12)
    assert not np.allclose(a.w, c.w, rtol=1e-6)
    assert a.info["replay_noise_rows"] == (len(noise), len(noise))


def _tiny_neural(sizes=(6, 9, 7, 8, 5, 10), seed=0):
    from fedrepro.nn import ModelSpec, build_model, mlp
    from fedrepro.problems.neural import NeuralProblem

    rng = np.random.default_rng(seed)
    n = sum(sizes)
    X = rng.normal(size=(n, 4))
    y = X[:, :3].argmax(axis=1).astype(np.int64)
    parts = np.split(rng.permutation(n), np.cumsum(sizes)[:-1])
    return NeuralProblem(build_model(ModelSpec((4,), mlp((5,), 3), "torch", "softmax_ce"), dtype=np.float64),
                         X, y, parts)


def test_fedadmm_gong_early_code_order_replayed_from_a_file():
    """The early code trains a round's clients one after another in np.random.choice's order. A run
    drawing that order (client_order: random, from ("client_order", r)) is replayed by a file listing
    each round's clients in that order with client_order: selection; ``ascending`` sorts them (so a
    permuted file does not change it), and under the default sampler ``selection`` is ``ascending``."""
    P, rounds, seed, rho = _tiny_neural(), 4, 2, 0.5
    common = dict(E=2, B=4, penalty=0.5, local_init="sequential_shared", random_epochs=False)
    sel = _sampled(P.m, rho, seed, rounds)
    drawn = {r: c[stream(seed, "client_order", r).permutation(len(c))] for r, c in sel.items()}

    def run(replay=None, **params):
        alg = make_algorithm("fedadmm_gong", **common, **params)
        res = simulate(P, alg, rho=rho, max_rounds=rounds, seed=seed, replay=replay)
        return res, alg

    own, _ = run(client_order="random")
    replayed, _ = run(Replay(selections=drawn), client_order="selection")
    np.testing.assert_allclose(_objectives(replayed), _objectives(own), rtol=1e-12)
    np.testing.assert_allclose(replayed.w, own.w, rtol=1e-10, atol=1e-12)
    asc_sorted, _ = run(Replay(selections=sel), client_order="ascending")
    asc_perm, _ = run(Replay(selections=drawn), client_order="ascending")
    np.testing.assert_allclose(asc_perm.w, asc_sorted.w, rtol=1e-10, atol=1e-12)
    assert not np.allclose(asc_sorted.w, own.w, rtol=1e-6)             # the order matters here
    np.testing.assert_array_equal(run(client_order="selection")[0].w, run(client_order="ascending")[0].w)
    # the training order a round used, and positions by the order given
    alg = make_algorithm("fedadmm_gong", **common, client_order="selection")
    S = np.array([4, 0, 3])
    np.testing.assert_array_equal(alg.training_order(RunContext(), S, 0), [0, 1, 2])
    np.testing.assert_array_equal(make_algorithm("fedadmm_gong", **common, client_order="ascending")
                                  .training_order(RunContext(), S, 0), [1, 2, 0])


# ---- consumers that assumed ascending ids -------------------------------------------------------------
def test_client_rows_and_rows_for_clients_take_any_order():
    clients = np.array([5, 2, 7, 0])
    np.testing.assert_array_equal(client_rows([7, 5], clients), [2, 0])
    np.testing.assert_array_equal(client_rows(np.array([0, 2, 5, 7]), clients), [3, 1, 0, 2])
    np.testing.assert_array_equal(client_rows([1, 2], np.arange(4)), [1, 2])
    with pytest.raises(ValueError, match="not all among the round's clients"):
        client_rows([3], clients)
    rows = np.array([[1.0], [2.0]])
    np.testing.assert_array_equal(rows_for_clients(rows, [0, 7], clients), [[0.0], [0.0], [2.0], [1.0]])


def _full_permuted(m, rounds, seed=0):
    rng = np.random.default_rng(seed)
    return {r: rng.permutation(m) for r in range(rounds)}


@pytest.mark.parametrize("name,params", [("afl", {"gamma_lambda": 0.3, "B": 16}),
                                         ("drfa_prox", {"local_steps": 2, "B": 8}),
                                         ("drfa_prox", {"participation": "sampled", "m": 3, "local_steps": 2}),
                                         ("individual", {"worker": 2, "B": 8})])
def test_full_participation_baselines_take_all_workers_in_any_order(name, params):
    """AFL's lambda_j weighs worker j's gradient and loss, DRFA-Prox's phase-1 rows are its workers',
    Ind_j's row is worker j's, whatever the order the round lists the workers in (all streams are
    keyed by worker, so the result is the sorted run's up to rounding)."""
    P = worker_blobs([40, 30, 25, 12], [10] * 4, n_classes=3, dim=6, seed=0, noise_growth=0.7)
    rounds = 4

    def run(replay=None):
        return simulate(P, make_algorithm(name, **params), max_rounds=rounds, seed=3, replay=replay)

    own, perm = run(), run(Replay(selections=_full_permuted(P.m, rounds)))
    for a, b in zip(own.trace, perm.trace):
        for k, v in a.items():
            if k not in TIMES:
                assert b[k] == pytest.approx(v, rel=1e-5, abs=1e-6), k
    np.testing.assert_allclose(perm.w, own.w, rtol=1e-5, atol=1e-6)


def test_frpg_with_every_worker_in_another_order():
    """FRPG with all workers: its rows follow the round's order (the minibatch rows do). With full
    local minibatches the numbers do not depend on the order, so the permuted run is the sorted one."""
    P = softmax_toy(m=6, n_per=8)

    def run(replay=None):
        return simulate(P, make_algorithm("frpg", batch=8), max_rounds=6, seed=1, replay=replay)

    own, perm = run(), run(Replay(selections=_full_permuted(P.m, 6, seed=2)))
    np.testing.assert_allclose(perm.w, own.w, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose([t["loss_F"] for t in perm.trace], [t["loss_F"] for t in own.trace], rtol=1e-9)


# ---- recording the selections a run used --------------------------------------------------------------
def test_recording_sampler_serves_and_keeps_the_draws_in_order():
    base = UniformSampler(20, 0.3, 4)
    rec = RecordingSampler(base)
    for r in (0, 2, 1, 2):
        np.testing.assert_array_equal(rec(r), base(r))
    got = rec(0)
    got[:] = -1                                       # the caller's copy
    assert list(rec.selections) == [0, 1, 2]
    for r, c in rec.selections.items():
        np.testing.assert_array_equal(c, base(r))
    rec = RecordingSampler(Replay(selections={0: [3, 1, 2], 1: [0]}).clients)
    rec(1), rec(0)
    assert {r: c.tolist() for r, c in rec.selections.items()} == {0: [3, 1, 2], 1: [0]}
    with pytest.raises(TypeError, match="callable"):
        RecordingSampler([0, 1])


def test_write_selections_round_trips_the_order(tmp_path):
    sel = {1: np.array([4, 0]), 0: np.array([2, 7, 0, 5])}
    path = write_selections(tmp_path / "sel.csv", sel)
    assert path.read_text() == "round,client\n0,2\n0,7\n0,0\n0,5\n1,4\n1,0\n"
    assert {r: c.tolist() for r, c in load_selections(path).items()} == {0: [2, 7, 0, 5], 1: [4, 0]}


def test_a_recorded_run_replays_itself_bit_for_bit():
    from fedrepro.experiments.runner import build_run

    P = Quadratic.random(m=8, dim=3, seed=1)
    cell = {"algorithm": "fedepm", "params": {}, "seed": 5, "k0": 2, "rho": 0.5, "max_rounds": 4,
            "mechanism": {"name": "laplace_epm", "epsilon": 1.0}}
    own = build_run(cell, problem=P).simulate()
    run = build_run(cell, problem=P, record_selections=True)
    recorded = run.simulate()
    np.testing.assert_array_equal(_objectives(recorded), _objectives(own))   # recording changes nothing
    assert {r: c.tolist() for r, c in run.recorder.selections.items()} == \
        {r: sample_clients(8, 0.5, 5, r).tolist() for r in range(4)}
    replayed = build_run(cell, problem=P, replay=Replay(selections=run.recorder.selections)).simulate()
    np.testing.assert_array_equal(replayed.w, own.w)
    # recording a replay: the file's order, its noise still replayed
    noise = np.random.default_rng(0).standard_normal((40, 3))
    perm = _permuted(_sampled(8, 0.5, 1, 4), seed=1)
    run = build_run(cell, problem=P, replay=Replay(selections=perm, noise=noise), record_selections=True)
    res = run.simulate()
    assert {r: c.tolist() for r, c in run.recorder.selections.items()} == {r: c.tolist() for r, c in perm.items()}
    assert res.info["replay_noise_rows"] == (8 + 16, 40)
    with pytest.raises(ValueError, match="asynchronous"):
        build_run({**cell, "algorithm": "aspire", "delays": {}, "rho": 1.0}, problem=P, record_selections=True)


@pytest.fixture
def logreg_npz(tmp_path):
    from tests.toys import write_logreg_npz
    return write_logreg_npz(tmp_path)[0]


def _cli(npz, out, *extra, algorithm="fedepm"):
    from fedrepro.cli import main

    return main(["run", "--algorithm", algorithm, "--problem", "logreg", "--data", str(npz), "--k0", "3",
                 "--rho", "0.5", "--rounds", "6", "--seed", "2", "--mechanism", "laplace_epm",
                 "--mechanism-param", "epsilon=1.0", "--out", str(out), "--quiet", *extra])


def test_cli_record_selections_then_replay_them(logreg_npz, tmp_path, capsys):
    from fedrepro.experiments.results import read_metadata

    rec = tmp_path / "rec.csv"
    assert _cli(logreg_npz, tmp_path / "own.parquet", "--record-selections", str(rec)) == 0
    assert f"recorded selections: 18 rows, rounds 0..5 -> {rec}" in capsys.readouterr().out
    assert {r: c.tolist() for r, c in load_selections(rec).items()} == \
        {r: sample_clients(6, 0.5, 2, r).tolist() for r in range(6)}
    assert read_metadata(tmp_path / "own.parquet")["recorded"]["selections"]["rounds"] == 6
    assert _cli(logreg_npz, tmp_path / "replayed.parquet", "--replay-selections", str(rec)) == 0
    own, replayed = (pd.read_parquet(tmp_path / f"{k}.parquet") for k in ("own", "replayed"))
    np.testing.assert_array_equal(replayed["objective"], own["objective"])
    # a replayed file in its own order, recorded as it was used, and replayed again: the same run
    sel = _write(tmp_path / "sel.csv", [(r, i) for r in range(6) for i in ((r + 3) % 6, r % 6, (r + 1) % 6)])
    rec2 = tmp_path / "rec2.csv"
    assert _cli(logreg_npz, tmp_path / "a.parquet", "--replay-selections", str(sel),
                "--record-selections", str(rec2)) == 0
    assert rec2.read_text() == sel.read_text()
    assert _cli(logreg_npz, tmp_path / "b.parquet", "--replay-selections", str(rec2)) == 0
    a, b = (pd.read_parquet(tmp_path / f"{k}.parquet") for k in ("a", "b"))
    np.testing.assert_array_equal(a["objective"], b["objective"])
    assert not np.array_equal(a["objective"], own["objective"])


def test_cli_record_selections_is_refused_before_work(logreg_npz, tmp_path):
    out = tmp_path / "x.parquet"
    with pytest.raises(SystemExit, match="--record-selections .*missing/rec.csv: folder .*missing does not exist"):
        _cli(logreg_npz, out, "--record-selections", str(tmp_path / "missing" / "rec.csv"))
    with pytest.raises(SystemExit, match="--record-selections .* is a folder"):
        _cli(logreg_npz, out, "--record-selections", str(tmp_path))
    with pytest.raises(SystemExit, match="is also --out"):
        _cli(logreg_npz, out, "--record-selections", str(out))
    sel = _write(tmp_path / "sel.csv", [(r, r % 6) for r in range(6)])
    with pytest.raises(SystemExit, match="is also --replay-selections"):
        _cli(logreg_npz, out, "--replay-selections", str(sel), "--record-selections", str(sel))
    with pytest.raises(SystemExit, match="--record-selections: algorithm 'aspire' is asynchronous"):
        _cli(logreg_npz, out, "--record-selections", str(tmp_path / "rec.csv"), algorithm="aspire")
    assert not out.exists() and not (tmp_path / "rec.csv").exists()
