"""The client-to-server channel (fedrepro.sim.channel) on the trials of issue #41: each stage does what it
says on hand-checkable rounds, the bugs it replaced stay fixed."""
import numpy as np
import pytest

from fedrepro.algorithms import make_algorithm
from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import expand
from fedrepro.experiments.runner import build_run
from fedrepro.sim import attack_ops
from fedrepro.sim.aggregation import build_aggregator
from fedrepro.sim.attacks import build_attack
from fedrepro.sim.loop import simulate
from fedrepro.sim.privacy import build_mechanism
from tests.toys import softmax_toy


def _softmax():
    return softmax_toy(m=10, n_per=20)


def _run(alg, problem=None, rounds=4, **stages):
    problem = problem or _softmax()
    algorithm = make_algorithm(alg) if isinstance(alg, str) else alg
    return simulate(problem, algorithm, k0=2, rho=1.0, max_rounds=rounds, seed=1, **stages)


def _recorded(alg_name, rounds=1, problem=None, **stages):
    """(clients, uploads) the server receives each round, and the honest uploads before the channel."""
    alg = make_algorithm(alg_name)
    got, sent = [], []
    receive, client_update = alg.receive, alg.client_update

    def rec(state, problem, ctx, clients, uploads, r):
        got.append((np.array(clients), np.array(uploads, dtype=float), np.array(state.w, dtype=float)))
        return receive(state, problem, ctx, clients, uploads, r)

    def upd(*a, **k):
        out = client_update(*a, **k)
        sent.append(np.array(out, dtype=float))
        return out
    alg.receive, alg.client_update = rec, upd
    _run(alg, problem=problem, rounds=rounds, **stages)
    return got, sent


def test_label_flip_on_fedavg_changes_the_run_and_keeps_the_training_weights():
    none = _run("fedavg", attack=build_attack({"name": "none", "B": 3}))
    flip = _run("fedavg", attack=build_attack({"name": "label_flip", "B": 3}))
    assert not np.array_equal(none.w, flip.w)           # was identical: weights of faulty workers were set to 0
    problem = _softmax()
    build_attack({"name": "label_flip", "B": 3}).prepare(problem, None)
    np.testing.assert_array_equal(problem.weights, np.ones(problem.m))
    np.testing.assert_array_equal(problem.reliable, np.arange(7))


def test_fedadmm_under_label_flip_runs():
    result = _run("fedadmm", attack=build_attack({"name": "label_flip", "B": 3}))   # was ZeroDivisionError
    assert result.status != "diverged" and np.isfinite(result.w).all()


@pytest.mark.parametrize("alg", ["fedavg", "fedadmm", "sgd_mean"])
@pytest.mark.parametrize("attack", ["gaussian", "sign_flip", "alie", "ipm", "scaling"])
def test_upload_attacks_run_on_fedavg_fedadmm_and_sgd(alg, attack):
    spec = {"name": attack, "B": 3}
    plain = _run(alg, rounds=2) if alg != "sgd_mean" else None
    result = simulate(_softmax(), make_algorithm(alg), k0=1 if alg == "sgd_mean" else 2, rho=1.0, max_rounds=2,
                      seed=1, attack=build_attack(spec))
    assert result.rounds == 2
    if plain is not None:
        assert not np.array_equal(plain.w, result.w)


def test_sign_flip_and_scaling_rewrite_the_faulty_updates_only():
    (clients, U, w), = _recorded("fedavg", attack=build_attack({"name": "sign_flip", "B": 3, "c": 2.0}))[0]
    _, (honest,) = _recorded("fedavg", attack=build_attack({"name": "sign_flip", "B": 3, "c": 2.0}))
    np.testing.assert_array_equal(U[:7], honest[:7])
    np.testing.assert_allclose(U[7:], w - 2.0 * (honest[7:] - w), rtol=1e-12, atol=1e-12)   # d -> -c d
    (_, U, w), = _recorded("fedavg", attack=build_attack({"name": "scaling", "B": 3, "c": 10.0}))[0]
    np.testing.assert_allclose(U[7:], w + 10.0 * (honest[7:] - w), rtol=1e-12, atol=1e-12)


def test_alie_and_ipm_send_the_papers_vectors():
    got, (honest,) = _recorded("fedavg", attack=build_attack({"name": "alie", "B": 3}))
    (_, U, w), = got
    D = honest - w
    z = attack_ops.alie_z(10, 3)                     # n = 10 workers, f = 3: s = floor(10/2 + 1) - 3 = 3
    assert z == pytest.approx(0.5244005127080407)   # Phi^-1(7/10)
    expect = D[:7].mean(axis=0) - z * D[:7].std(axis=0)
    for row in U[7:]:
        np.testing.assert_allclose(row - w, expect, rtol=1e-10, atol=1e-12)
    got, (honest,) = _recorded("fedavg", attack=build_attack({"name": "ipm", "B": 3, "eps": 0.5}))
    (_, U, w), = got
    for row in U[7:]:
        np.testing.assert_allclose(row - w, -0.5 * (honest[:7] - w).mean(axis=0), rtol=1e-10, atol=1e-12)


def test_silent_workers_are_dropped_for_an_averaging_server():
    (clients, U, _), = _recorded("fedavg", attack=build_attack({"name": "silent", "B": 3}))[0]
    np.testing.assert_array_equal(clients, np.arange(7))
    assert U.shape[0] == 7


def test_krum_and_trimmed_mean_plug_into_fedavg():
    got, (honest,) = _recorded("fedavg", attack=build_attack({"name": "sign_flip", "B": 3, "c": 50.0}),
                               aggregator=build_aggregator({"name": "krum"}))
    (_, U, w), = got
    corrupted = honest.copy()
    corrupted[7:] = w - 50.0 * (honest[7:] - w)
    from fedrepro.algorithms.ops.aggregators import krum, trimmed_mean
    chosen, i = krum(corrupted - w, 3)              # f = the round's faulty count
    assert i < 7                                    # Krum picks an honest worker
    for row in U:                                   # every row is the chosen update: FedAvg's mean is Krum
        np.testing.assert_allclose(row, w + chosen, rtol=1e-12, atol=1e-12)
    got, _ = _recorded("fedavg", attack=build_attack({"name": "sign_flip", "B": 3, "c": 50.0}),
                       aggregator=build_aggregator({"name": "trimmed_mean"}))
    (_, U, w), = got
    np.testing.assert_allclose(U[0], w + trimmed_mean(corrupted - w, 3), rtol=1e-12, atol=1e-12)


def test_fedadmm_z_maps_to_its_model_and_back():
    got, (honest,) = _recorded("fedadmm", aggregator=build_aggregator({"name": "mean", "weights": "unweighted"}))
    (clients, U, w), = got
    alg = make_algorithm("fedadmm")
    problem = _softmax()
    from fedrepro.core.context import RunContext
    state = alg.init(problem, RunContext(k0=2))
    state.w = w
    D = alg.upload_to_update(state, problem, clients, honest)
    np.testing.assert_allclose(alg.update_to_upload(state, problem, clients, D, honest), honest, rtol=1e-12)
    np.testing.assert_allclose(U / state.sig[:, None] - w, np.tile(D.mean(axis=0), (len(U), 1)), rtol=1e-9,
                               atol=1e-12)


def test_scaffold_attacks_and_aggregates_its_model_update_and_keeps_the_control_variates():
    # SCAFFOLD uploads (Delta y_i, Delta c_i): a channel stage acts on Delta y_i only
    from tests.toys import worker_blobs
    blobs = worker_blobs([12] * 10, [6] * 10, n_classes=3, dim=4, seed=0, init="torch")
    got, (honest,) = _recorded("scaffold", problem=blobs, attack=build_attack({"name": "sign_flip", "B": 3, "c": 2.0}),
                               aggregator=build_aggregator({"name": "coordinate_median"}))
    (_, U, w), = got
    d = w.size
    corrupted = honest[:, :d].copy()
    corrupted[7:] = -2.0 * corrupted[7:]            # sign flip of the faulty workers' model updates Delta y_i
    med = np.median(corrupted, axis=0)
    np.testing.assert_allclose(U[:, :d], np.tile(med, (len(U), 1)), rtol=1e-6, atol=1e-7)   # float32 uploads
    np.testing.assert_array_equal(U[:, d:], honest[:, d:])       # Delta c_i as the clients computed them


@pytest.mark.parametrize("alg, mech", [("scaffold", {"name": "clip", "clip": 1.0}),
                                       ("scaffold", {"name": "gaussian", "clip": 1.0, "noise_multiplier": 1.0})] +
                         [(a, {"name": "laplace_epm", "epsilon": 1.0}) for a in ("scaffold", "afl", "drfa_prox", "aspire")])
def test_a_mechanism_is_refused_when_a_client_also_sends_something_it_does_not_protect(alg, mech):
    from fedrepro.sim.channel import Channel
    why = Channel(build_mechanism(mech)).refusals(make_algorithm(alg))
    assert why and "neither clips nor noises" in why[0] and make_algorithm(alg).upload_extra in why[0]


def test_gaussian_mechanism_with_zero_noise_is_the_clipped_run_bit_for_bit():
    clipped = _run("fedavg", mechanism=build_mechanism({"name": "clip", "clip": 0.05}))
    zero = _run("fedavg", mechanism=build_mechanism({"name": "gaussian", "clip": 0.05, "noise_multiplier": 0.0}))
    plain = _run("fedavg")
    assert np.array_equal(clipped.w, zero.w) and not np.array_equal(plain.w, clipped.w)
    assert [r["objective"] for r in clipped.trace] == [r["objective"] for r in zero.trace]


def test_clipping_bounds_every_update_and_the_release_is_the_mean():
    got, (honest,) = _recorded("fedavg", mechanism=build_mechanism({"name": "clip", "clip": 0.01}))
    (_, U, w), = got
    D = honest - w
    norms = np.linalg.norm(D, axis=1)
    clipped = D * np.minimum(1.0, 0.01 / norms)[:, None]
    np.testing.assert_allclose(U - w, np.tile(clipped.mean(axis=0), (len(U), 1)), rtol=1e-9, atol=1e-15)


def test_refusals_at_config_check():
    base = {"problem": {"name": "linreg_synthetic"}, "algorithms": {"fedavg": None}}
    with pytest.raises(ConfigError, match="tau .* none of \\['fedavg'\\] is asynchronous"):
        expand("custom", "x", {**base, "tau": 4})
    with pytest.raises(ConfigError, match="aggregator 'krum' cannot follow mechanism 'gaussian'"):
        expand("custom", "x", {**base, "aggregator": {"name": "krum"},
                               "mechanism": {"name": "gaussian", "noise_multiplier": 1.0}})
    with pytest.raises(ConfigError, match="unknown aggregator 'median'"):
        expand("custom", "x", {**base, "aggregator": {"name": "median"}})
    with pytest.raises(ConfigError, match=r"aggregator 'trimmed_mean': unknown key\(s\) \['beta'\]"):
        expand("custom", "x", {**base, "aggregator": {"name": "trimmed_mean", "beta": 0.1}})
    cells = expand("custom", "x", {**base, "grid": {"aggregator.name": ["mean", "krum"], "attack.name": ["alie"]},
                                   "attack": {"B": 2}})
    assert [c["columns"] for c in cells] == [{"aggregator": "mean", "attack": "alie"},
                                            {"aggregator": "krum", "attack": "alie"}]


def test_tau_on_a_synchronous_cell_is_an_error():
    cell = {"problem": {"name": "linreg_synthetic", "m": 6, "n": 3, "d_low": 5, "d_high": 8}, "algorithm": "fedavg",
            "seed": 0, "tau": 3}
    with pytest.raises(ValueError, match="tau .* synchronous rounds"):
        build_run(cell)


def test_gaussian_mechanism_records_the_accountants_epsilon_after_each_round():
    from fedrepro.sim.accounting import calibrate_noise_multiplier, epsilon_after

    mech = build_mechanism({"name": "gaussian", "clip": 0.5, "noise_multiplier": 1.3, "delta": 1e-5})
    result = simulate(_softmax(), make_algorithm("fedavg"), k0=2, rho=0.5, max_rounds=4, eval_every=1, seed=1,
                      mechanism=mech)
    eps = [r.get("dp_epsilon") for r in result.trace[1:]]
    assert eps == pytest.approx([epsilon_after(r, 1.3, 0.5, 1e-5) for r in range(1, 5)], rel=1e-12)
    assert all(np.isfinite(eps)) and eps == sorted(eps)
    target = build_mechanism({"name": "gaussian", "clip": 0.5, "epsilon": 3.0, "delta": 1e-5})
    result = simulate(_softmax(), make_algorithm("fedavg"), k0=2, rho=0.5, max_rounds=4, seed=1, mechanism=target)
    assert target.z == pytest.approx(calibrate_noise_multiplier(3.0, rounds=4, sampling_rate=0.5, delta=1e-5))
    assert result.trace[-1]["dp_epsilon"] <= 3.0 and result.trace[-1]["dp_epsilon"] == pytest.approx(3.0, rel=1e-3)


def test_a_data_side_attack_leaves_the_uploads_so_the_loops_skip_the_channel():
    # label_flip (and the backdoor) act on the data before the run: nothing touches the uploads, and the
    # asynchronous loop never maps its reports through the channel (with_uploads) for it
    from fedrepro.sim.channel import Channel

    assert Channel(attack=build_attack({"name": "label_flip", "B": 1})).empty
    assert not Channel(attack=build_attack({"name": "gaussian", "B": 1})).empty
    assert not Channel(attack=build_attack({"name": "silent", "B": 1})).empty
