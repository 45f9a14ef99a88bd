import numpy as np
import pytest

from fedrepro.sim.loop import sample_clients, simulate
from fedrepro.sim.stopping import GradientTolerance, ObjectiveTarget
from tests.toys import LocalGD, Quadratic


def make_problem(m=10, dim=3, seed=0):
    rng = np.random.default_rng(seed)
    return Quadratic(rng.normal(size=(m, dim)))


def test_full_participation_converges_to_optimum():
    p = make_problem()
    res = simulate(p, LocalGD(step=0.5), k0=1, rho=1.0, max_rounds=200, seed=1,
                   stop=GradientTolerance(tol=1e-20))
    assert res.status == "converged"
    np.testing.assert_allclose(res.w, p.optimum(), atol=1e-9)
    assert res.rounds == res.trace[-1]["round"] and res.iterations == res.rounds


def test_sampling_is_seeded_per_round_and_common_across_runs():
    a = [sample_clients(100, 0.3, 7, r) for r in range(5)]
    b = [sample_clients(100, 0.3, 7, r) for r in range(5)]
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert all(len(x) == 30 and np.all(np.diff(x) > 0) for x in a)
    assert not np.array_equal(a[0], a[1])
    assert not np.array_equal(a[0], sample_clients(100, 0.3, 8, 0))
    assert len(sample_clients(7, 0.5, 0, 0)) == 4          # ceil(rho m)
    with pytest.raises(ValueError, match="rho"):
        sample_clients(10, 0.0, 0, 0)


def test_same_seed_same_trace_different_seed_differs():
    p = make_problem()
    runs = [simulate(p, LocalGD(), k0=3, rho=0.4, max_rounds=20, seed=s) for s in (5, 5, 6)]
    obj = [np.array([t["objective"] for t in r.trace]) for r in runs]
    np.testing.assert_array_equal(obj[0], obj[1])
    assert not np.allclose(obj[0], obj[2])


def test_round_cap_eval_every_and_metrics_recorded():
    p = make_problem()
    res = simulate(p, LocalGD(), k0=2, rho=0.5, max_rounds=10, seed=0, eval_every=4)
    assert res.status == "max_rounds"
    assert [t["round"] for t in res.trace] == [0, 4, 8, 10]
    assert res.trace[-1]["iteration"] == 20 and res.trace[-1]["uploaded"] == 5
    assert all(t["wall_time"] >= t["local_time"] >= 0 for t in res.trace)


def test_divergence_is_a_status_not_a_crash():
    p = make_problem()
    res = simulate(p, LocalGD(step=3.0), k0=5, max_rounds=500, seed=0)
    assert res.status == "diverged" and res.stop_reason.startswith("diverged: objective above")
    f0 = res.trace[0]["objective"]
    assert abs(res.trace[-1]["objective"]) > 1e12 * max(1.0, abs(f0))          # the default threshold
    assert all(abs(t["objective"]) <= 1e12 * max(1.0, abs(f0)) for t in res.trace[:-1])
    # without the threshold the run goes on until a value is not finite (#14, 3: 1e227 was 'max_rounds')
    late = simulate(p, LocalGD(step=3.0), k0=5, max_rounds=500, seed=0, diverge_factor=None)
    assert late.status == "diverged" and late.stop_reason == "diverged" and late.rounds > res.rounds
    assert not np.isfinite(late.trace[-1]["objective"]) or not np.all(np.isfinite(late.w))
    with pytest.raises(ValueError, match=r"run: diverge_factor=0.5 is not allowed"):
        simulate(p, LocalGD(), max_rounds=2, diverge_factor=0.5)


def test_target_rule_and_bad_k0():
    p = make_problem()
    ref = simulate(p, LocalGD(step=0.5), max_rounds=50, seed=0)
    res = simulate(p, LocalGD(step=0.1), max_rounds=500, seed=0,
                   stop=ObjectiveTarget(ref.final["objective"], rel=1e-6))
    assert res.status == "converged" and res.stop_reason == "target"
    assert res.final["objective"] - ref.final["objective"] <= 1e-6 * (1 + abs(ref.final["objective"]))
    with pytest.raises(ValueError, match="k0"):
        simulate(p, LocalGD(), k0=0)


# ---- replaying another implementation's randomness (fedrepro.sim.replay) -------------------------------------
from fedrepro.algorithms import make_algorithm                      # noqa: E402
from fedrepro.sim.privacy import build_mechanism, draw_noise, stdlap    # noqa: E402
from fedrepro.problems.glm import LinearModelProblem             # noqa: E402
from fedrepro.sim.replay import Replay, ReplayError, load_noise, load_replay, load_selections   # noqa: E402
from fedrepro.core.rng import stream                                     # noqa: E402
from tests.toys import RecordingGD                                  # noqa: E402

TIMES = ("wall_time", "cpu_time", "local_time", "local_cpu_time")


def _logreg(m=6, n=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(40 * m, n))
    y = (X @ rng.normal(size=n) + 0.5 * rng.normal(size=40 * m) > 0).astype(float)
    return LinearModelProblem(X, y, np.repeat(np.arange(m), 40), loss="logistic", lam=1e-3, weights=np.ones(m))


def _epm_run(problem, seed, rounds, replay=None, init_noise="stdlap"):
    return simulate(problem, make_algorithm("fedepm", init_noise=init_noise), k0=3, rho=0.5, max_rounds=rounds,
                    seed=seed, mechanism=build_mechanism({"name": "laplace_epm", "epsilon": 1.0}), replay=replay)


def _traces_equal(a, b):
    assert len(a.trace) == len(b.trace)
    for x, y in zip(a.trace, b.trace):
        assert {k: v for k, v in x.items() if k not in TIMES} == {k: v for k, v in y.items() if k not in TIMES}
    np.testing.assert_array_equal(a.w, b.w)


def _write_selections(path, rows, header="round,client"):
    path.write_text(header + "\n" + "".join(f"{r},{i}\n" for r, i in rows))
    return path


def _draws_of_seeded_run(problem, seed, rounds, rho=0.5):
    """What a seeded FedEPM + laplace_epm run draws, rebuilt from the documented streams: the
    selections sample_clients(m, rho, seed, r) and the unit noise rows in call order (m initial
    stdlap rows from stream 'init' 0, then per round one row per selected client, stream 'noise' r)."""
    m, n = problem.m, problem.dim
    sel = [(r, int(i)) for r in range(rounds) for i in sample_clients(m, rho, seed, r)]
    noise = [stdlap(stream(seed, "init", 0), (m, n))]
    noise += [draw_noise(stream(seed, "noise", r), (len(sample_clients(m, rho, seed, r)), n), "code")
              for r in range(rounds)]
    return sel, np.vstack(noise)


def test_replayed_run_is_bit_identical_to_the_run_that_drew_the_same_numbers(tmp_path):
    P, rounds = _logreg(), 8
    own = _epm_run(P, seed=4, rounds=rounds)
    sel, noise = _draws_of_seeded_run(P, 4, rounds)
    np.save(tmp_path / "noise.npy", noise)
    replay = load_replay(_write_selections(tmp_path / "sel.csv", sel), tmp_path / "noise.npy")
    # another seed: only the replayed numbers can make the runs agree
    replayed = _epm_run(P, seed=99, rounds=rounds, replay=replay)
    _traces_equal(own, replayed)
    assert replayed.info["replay_noise_rows"] == (len(noise), len(noise))
    assert not np.array_equal(_epm_run(P, seed=99, rounds=rounds).w, own.w)
    # the replay object can drive a second run (fresh noise cursor per run)
    _traces_equal(own, _epm_run(P, seed=7, rounds=rounds, replay=replay))


def test_replayed_noise_alone_and_plain_laplace_initial_noise(tmp_path):
    P, rounds, seed = _logreg(seed=1), 5, 2
    own = _epm_run(P, seed, rounds, init_noise="laplace")
    m, n = P.m, P.dim
    rows = [stream(seed, "init", 0).laplace(0.0, 1.0, size=(m, n))]
    rows += [draw_noise(stream(seed, "noise", r), (len(sample_clients(m, 0.5, seed, r)), n), "code")
             for r in range(rounds)]
    replayed = _epm_run(P, seed, rounds, replay=Replay(noise=np.vstack(rows)), init_noise="laplace")
    _traces_equal(own, replayed)


def test_hand_made_selection_file_drives_exactly_those_clients(tmp_path):
    path = _write_selections(tmp_path / "sel.csv", [(0, 4), (0, 1), (2, 5), (1, 0), (2, 2), (2, 3)])
    # each round's clients in the order of its rows (not sorted)
    assert {r: c.tolist() for r, c in load_selections(path).items()} == {0: [4, 1], 1: [0], 2: [5, 2, 3]}
    alg = RecordingGD()
    res = simulate(make_problem(m=6), alg, rho=0.5, max_rounds=3, seed=0, replay=load_replay(path))
    assert alg.log == ["init", (0, [4, 1]), (1, [0]), (2, [5, 2, 3])]
    assert [t["uploaded"] for t in res.trace[1:]] == [2, 1, 3]
    alg = RecordingGD()                   # fewer rounds than the file covers: its first rounds
    simulate(make_problem(m=6), alg, max_rounds=2, replay=load_replay(path))
    assert alg.log == ["init", (0, [4, 1]), (1, [0])]


@pytest.mark.parametrize("text, match", [
    ("client,round\n0,1\n", "line 1: the header must be exactly 'round,client'"),
    ("round;client\n0;1\n", "line 1: the header must be exactly 'round,client'"),
    ("", "line 1: the header"),
    ("round,client\n0,1\n0,x\n", "line 3: round and client must be integers"),
    ("round,client\n0,1\n0,1,2\n", "line 3: expected 2 values"),
    ("round,client\n0,-1\n", "line 2: round and client are 0-based"),
    ("round,client\n0,1\n1,2\n0,1\n", "line 4: duplicate row round=0, client=1 \\(first on line 2\\)"),
    ("round,client\n0,1\n2,2\n", "round 1 has no selected client"),
    ("round,client\n", "no selections"),
])
def test_bad_selection_files_name_file_and_row(tmp_path, text, match):
    path = tmp_path / "sel.csv"
    path.write_text(text)
    with pytest.raises(ReplayError, match=match) as err:
        load_selections(path)
    assert str(path) in str(err.value)


def test_replay_that_does_not_fit_the_run_is_refused_before_it_starts(tmp_path):
    path = _write_selections(tmp_path / "sel.csv", [(0, 1), (1, 0), (1, 7), (2, 3)])
    alg = RecordingGD()
    with pytest.raises(ReplayError, match=r"sel.csv, line 4 \(round=1, client=7\): client ids must be in 0..5"):
        simulate(make_problem(m=6), alg, max_rounds=3, replay=load_replay(path))
    path = _write_selections(tmp_path / "sel.csv", [(0, 1), (1, 0), (2, 3)])
    with pytest.raises(ReplayError, match="covers rounds 0..2 but the run may perform 4 rounds.*at most 3"):
        simulate(make_problem(m=6), alg, max_rounds=4, replay=load_replay(path))
    np.save(tmp_path / "noise.npy", np.zeros((10, 4)))
    with pytest.raises(ReplayError, match="noise.npy has rows of 4 entries; the model has n = 3"):
        simulate(make_problem(m=6), alg, max_rounds=3, replay=load_replay(noise=tmp_path / "noise.npy"))
    assert alg.log == []                  # nothing ran


def test_too_few_noise_rows_says_how_many_at_which_round(tmp_path):
    P = _logreg()                         # m = 6, 3 clients a round: 6 initial rows + 3 per round
    np.save(tmp_path / "noise.npy", np.ones((6 + 3 * 2 + 1, P.dim)))
    with pytest.raises(ReplayError, match=r"noise.npy has 13 rows but round 2 needs 3 more \(rows 12..14\): "
                                          "supply at least 15"):
        _epm_run(P, seed=0, rounds=5, replay=load_replay(noise=tmp_path / "noise.npy"))
    np.save(tmp_path / "few.npy", np.ones((4, P.dim)))
    with pytest.raises(ReplayError, match=r"few.npy has 4 rows but the initial noise \('init'\) needs 6 more"):
        _epm_run(P, seed=0, rounds=5, replay=load_replay(noise=tmp_path / "few.npy"))


def test_bad_noise_files(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros(5))
    with pytest.raises(ReplayError, match="a.npy: replay noise must be a 2-D real array"):
        load_noise(tmp_path / "a.npy")
    bad = np.zeros((3, 2))
    bad[1, 0] = np.nan
    np.save(tmp_path / "b.npy", bad)
    with pytest.raises(ReplayError, match="b.npy: row 1 holds a non-finite value"):
        load_noise(tmp_path / "b.npy")
    (tmp_path / "c.npy").write_text("not numpy")
    with pytest.raises(ReplayError, match="c.npy is not a .npy array file"):
        load_noise(tmp_path / "c.npy")
    with pytest.raises(ReplayError, match="does not exist"):
        load_replay(noise=tmp_path / "missing.npy")


def test_samplers_ceil_and_floor_counts_and_the_context_serves_the_loops_draw():
    from fedrepro.core.sampling import UniformSampler, participants

    assert participants(7, 0.5) == 4 and participants(7, 0.5, "floor") == 3     # ceil(3.5), floor(3.5)
    assert participants(100, 0.1, "floor") == 10 and participants(5, 0.1, "floor") == 1   # max(floor(C m), 1)
    assert participants(10, 0.3) == 3 and participants(10, 1.0, "floor") == 10
    with pytest.raises(ValueError, match="count"):
        UniformSampler(10, 0.5, 0, count="round")
    with pytest.raises(ValueError, match="rho"):
        UniformSampler(10, 1.5, 0)
    s = UniformSampler(50, 0.1, 3, count="floor")
    assert len(s(0)) == 5 and np.array_equal(s(2), s(2)) and np.all(np.diff(s(2)) > 0)
    # the loop uses the context's sampler: a custom sampler drives the run
    P = Quadratic.random(m=6)
    alg = RecordingGD()
    simulate(P, alg, k0=1, rho=0.5, max_rounds=3, seed=0, sampler=lambda r: np.array([r % 6]))
    assert [x for x in alg.log if x != "init"] == [(0, [0]), (1, [1]), (2, [2])]
    with pytest.raises(ValueError, match="not both"):
        simulate(P, RecordingGD(), max_rounds=2, sampler=lambda r: np.array([0]),
                 replay=Replay(selections={0: np.array([1]), 1: np.array([2])}))
