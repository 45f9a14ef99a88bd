"""Replayed selections keep their order (issue #41): a round's clients reach the run in the order the
file (or the dict given to Replay) lists them, work that does not depend on the order gives the
sorted replay's numbers, and whatever is drawn per client by position follows that order."""
import numpy as np
import pandas as pd
import pytest

from fedrepro.algorithms import make_algorithm
from fedrepro.core.sampling import sample_clients
from fedrepro.core.store import make_store
from fedrepro.sim.loop import simulate
from fedrepro.sim.privacy import build_mechanism
from fedrepro.sim.replay import Replay, ReplayError, load_replay, load_selections
from tests.toys import Quadratic, RecordingGD, softmax_toy

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
