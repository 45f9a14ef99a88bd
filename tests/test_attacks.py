"""Attack modules (fedrepro.sim.attacks) on a tiny softmax problem."""
import numpy as np
import pytest

from fedrepro.algorithms import RunContext, make_algorithm
from fedrepro.sim.attacks import ATTACKS, build_attack
from tests.toys import softmax_toy


_problem = softmax_toy


def test_label_flip_only_faulty_workers():
    prob = _problem()
    y0 = prob.y.copy()
    att = ATTACKS["label_flip"]({"name": "label_flip", "faulty": [6, 7]})
    att.prepare(prob, RunContext())
    faulty_idx = np.concatenate([prob.parts[6], prob.parts[7]])
    honest_idx = np.concatenate(prob.parts[:6])
    np.testing.assert_array_equal(prob.train_labels[faulty_idx], 9 - y0[faulty_idx])
    np.testing.assert_array_equal(prob.train_labels[honest_idx], y0[honest_idx])
    np.testing.assert_array_equal(prob.y, y0)                 # metrics keep the true labels
    np.testing.assert_array_equal(prob.reliable, np.arange(6))
    # default B = 4 -> the last four workers
    att = ATTACKS["label_flip"]({"name": "label_flip"})
    att.prepare(prob, RunContext())
    np.testing.assert_array_equal(np.flatnonzero(prob.faulty), [4, 5, 6, 7])


def _uploads(alg_name, attack_spec, k0=1, **params):
    prob = _problem()
    alg = make_algorithm(alg_name, **params)
    ctx = RunContext(k0=k0, seed=3)
    att = build_attack(attack_spec)
    att.prepare(prob, ctx)
    st = alg.init(prob, ctx)
    clients = np.arange(prob.m)
    st.w = alg.aggregate(st, prob, ctx, 0)
    alg.begin_round(st, prob, ctx, clients, 0)
    for t in range(k0):
        alg.local_step(st, prob, ctx, clients, 0, t)
    U = alg.upload(st, prob, ctx, clients, 0)
    return prob, alg, st, ctx, U, att.corrupt(U, clients, 0, st, prob, alg, ctx)


def test_gaussian_scale_and_rows():
    c = 1e4
    prob, alg, st, ctx, U, V = _uploads("sgd_mean", {"name": "gaussian", "c": c, "faulty": [5, 6, 7]})
    np.testing.assert_array_equal(V[:5], U[:5])
    xi = ctx.rng("attack", 0).standard_normal((1, 3, prob.dim))[0]
    np.testing.assert_allclose(V[5:], c * xi)
    assert np.std(V[5:]) == pytest.approx(c, rel=0.1)


def test_gaussian_on_frpg_goes_through_the_model():
    lam = 1.6
    for name, k0, extra in [("frpg", 1, {}), ("lfrpg", 3, {"T": 3})]:
        prob, alg, st, ctx, U, V = _uploads(name, {"name": "gaussian", "faulty": [7]}, k0=k0, **extra)
        S = alg.slots_per_upload
        models = 1e4 * ctx.rng("attack", 0).standard_normal((S, 1, prob.dim))
        z = st.w - models[:, 0]
        g = lam * z / np.linalg.norm(z, axis=1, keepdims=True)
        np.testing.assert_allclose(V[7], g.mean(axis=0), rtol=1e-12)
        assert np.all(np.linalg.norm(V, axis=1) <= lam + 1e-12)
        np.testing.assert_array_equal(V[:7], U[:7])


def test_no_attack_B0_is_identity_and_silent_drops_faulty():
    # one semantics for the workflow and the CLI: no block, {} or {name: none} naming nobody -> no attack
    for spec in (None, {}, {"name": "none"}, {"name": "none", "B": 0}):
        assert build_attack(spec) is None
    # {name: none} naming workers: they follow the protocol but are left out of the metrics
    prob, alg, st, ctx, U, V = _uploads("sgd_mean", {"name": "none", "faulty": [0, 1]})
    np.testing.assert_array_equal(U, V)
    assert prob.senders(np.arange(prob.m)).all()
    np.testing.assert_array_equal(prob.faulty, [True] * 2 + [False] * 6)
    prob, alg, st, ctx, U, V = _uploads("sgd_mean", {"name": "silent", "faulty": [6, 7]})
    np.testing.assert_array_equal(U, V)
    np.testing.assert_array_equal(prob.senders(np.arange(prob.m)), [True] * 6 + [False] * 2)
    w = st.w.copy()
    alg.receive(st, prob, ctx, np.arange(prob.m), U, 0)
    np.testing.assert_allclose(st.w, w - 3.0 * U[:6].mean(axis=0))   # a_1 = 3/sqrt(1)


def test_unknown_attack_rejected():
    with pytest.raises(ValueError, match="unknown attack"):
        build_attack({"name": "bogus_attack"})


# ---- label flip on the neural problems (any classification problem with rewritable training labels) -----
def _mnist_mlp1(m=4, n=48, seed=0):
    """A tiny MNIST-shaped NeuralProblem on MLP-1 (the fedepm / fedadmm papers' model): m clients of n/m
    random images, the first 16 as the test split."""
    from fedrepro.nn import build_model
    from fedrepro.problems.neural import NeuralProblem

    rng = np.random.default_rng(seed)
    X = rng.random((n, 784)).astype(np.float32)
    y = rng.integers(0, 10, n)
    return NeuralProblem(build_model("mlp1"), X, y, np.array_split(np.arange(n), m), X[:16], y[:16])


def test_label_flip_on_a_neural_problem_changes_only_the_faulty_clients_training():
    prob = _mnist_mlp1()
    w = prob.init_params(np.random.default_rng(1))
    y0, yt0 = prob.y.copy(), prob.y_test.copy()
    clients = np.arange(prob.m)
    batches = [prob.parts[c][:5] for c in clients]

    def training():
        return {"client_grads": prob.client_grads(w, clients), "client_losses": prob.client_losses(w, clients),
                "batch_loss_grad": np.stack([prob.batch_loss_grad(w, b)[1].copy() for b in batches]),
                "batch_loss": np.array([prob.batch_loss(w, b) for b in batches]),
                "minibatch_grads": prob.minibatch_grads(w, np.stack(batches))}

    before, metrics = training(), prob.evaluate(w, prob.metric_names())
    objective, gradient = prob.objective(w), prob.gradient(w)
    attack = build_attack({"name": "label_flip", "faulty": [1, 3]})
    attack.prepare(prob, RunContext())
    after = training()
    faulty, benign = [1, 3], [0, 2]
    for name in before:
        np.testing.assert_array_equal(after[name][benign], before[name][benign], err_msg=name)   # untouched, bit for bit
        assert all(not np.array_equal(after[name][j], before[name][j]) for j in faulty), name
    for j in faulty:                                            # y -> C - 1 - y, C = the model's 10 classes
        np.testing.assert_array_equal(prob.train_labels[prob.parts[j]], 9 - y0[prob.parts[j]])
    np.testing.assert_array_equal(prob.y, y0)                   # metrics and test split keep the true labels
    np.testing.assert_array_equal(prob.y_test, yt0)
    assert prob.evaluate(w, prob.metric_names()) == metrics
    assert prob.objective(w) == objective
    np.testing.assert_array_equal(prob.gradient(w), gradient)
    # the local epochs' minibatches (epoch_batches -> batch_loss_grad) read the flipped labels
    idx = next(prob.epoch_batches(np.random.default_rng(0), 1, 4, 1))
    np.testing.assert_array_equal(prob.train_labels[idx], 9 - y0[idx])


def test_label_flip_takes_the_problems_classes():
    from tests.toys import worker_blobs

    prob = worker_blobs([12] * 4, [4] * 4, n_classes=3)        # a 3-class WorkerNeuralProblem
    y0 = prob.y.copy()
    build_attack({"name": "label_flip", "B": 1, "n_classes": 10}).prepare(prob, RunContext())
    last = prob.parts[3]
    np.testing.assert_array_equal(prob.train_labels[last], 2 - y0[last])       # C = 3, not the key's 10
    np.testing.assert_array_equal(prob.train_labels[np.concatenate(prob.parts[:3])], y0[np.concatenate(prob.parts[:3])])
    with pytest.raises(ValueError, match="flip_labels mapping"):
        prob.flip_labels([0], lambda y: y + 3)


def test_label_flip_on_fedavg_sgd_with_mlp1_changes_only_the_faulty_uploads():
    from fedrepro.sim.loop import simulate

    got = {}
    for name, attack in (("plain", None), ("flip", build_attack({"name": "label_flip", "faulty": [2]}))):
        alg = make_algorithm("fedavg_sgd", E=1, B=6)
        receive, rows = alg.receive, []

        def capture(state, problem, ctx, clients, uploads, r, receive=receive, rows=rows):
            rows.append(np.array(uploads))
            return receive(state, problem, ctx, clients, uploads, r)
        alg.receive = capture
        simulate(_mnist_mlp1(), alg, max_rounds=1, eval_every=1, seed=4, attack=attack)
        got[name] = rows[0]
    np.testing.assert_array_equal(got["flip"][[0, 1, 3]], got["plain"][[0, 1, 3]])
    assert not np.array_equal(got["flip"][2], got["plain"][2])


# ---- the backdoor (aspire App. C.2): the adversary owns the added worker ----------------------------------
def test_backdoor_declares_its_data_and_owns_the_added_worker():
    from fedrepro.problems.softmax import SoftmaxProblem
    from fedrepro.problems.worker_neural import WorkerNeuralProblem
    from tests.toys import backdoor_blobs, worker_blobs

    attack = build_attack({"name": "backdoor", "poison_fraction": 0.1, "loss_scale": 10.0})
    assert attack.acts_on == "data" and attack.adds_workers == 1
    assert attack.problem_options() == {"backdoor": {"poison_fraction": 0.1}}      # the data; loss_scale is its own
    assert build_attack({"name": "backdoor"}).problem_options() == {"backdoor": {}}
    for bad in ({"B": 2}, {"faulty": [0]}, {"poison_fraction": 0.0}, {"loss_scale": 0.9}, {"bogus": 1}):
        with pytest.raises(ValueError, match="backdoor"):
            build_attack({"name": "backdoor", **bad})
    alg = make_algorithm("afl")
    attack.check(alg, WorkerNeuralProblem)                     # the class can take it (config check)
    with pytest.raises(ValueError, match=r"attack 'backdoor' cannot run on problem 'SoftmaxProblem'.*BackdoorProblem"):
        attack.check(alg, SoftmaxProblem)
    with pytest.raises(ValueError, match="built without the malicious worker's data"):
        attack.check(alg, worker_blobs([12] * 4, [4] * 4))     # a worker_neural problem built without it
    prob = backdoor_blobs()
    attack.check(alg, prob)
    attack.prepare(prob, RunContext())
    assert attack.faulty.tolist() == [prob.m - 1] == [prob.malicious]
    assert prob.reported_loss(prob.m - 1, 0.25) == 2.5 and prob.reported_loss(0, 0.25) == 0.25


def test_the_problem_spec_no_longer_takes_the_backdoor():
    from fedrepro.problems import validate_problem_spec

    with pytest.raises(ValueError, match=r"attack: \{name: backdoor"):
        validate_problem_spec({"name": "worker_neural", "dataset": "fmnist3", "backdoor": {"poison_fraction": 0.1}})


def test_build_run_prepares_the_backdoor_workers_data(monkeypatch):
    # the runner builds the attack first and hands its data options to the problem's builder
    from fedrepro.experiments import runner

    seen = {}

    def fake_build(spec, seed, **kwargs):
        seen.update(kwargs)
        from tests.toys import backdoor_blobs
        return backdoor_blobs()
    monkeypatch.setattr(runner, "build_problem", fake_build)
    cell = {"problem": {"name": "worker_neural", "dataset": "fmnist3"}, "algorithm": "afl", "seed": 0,
            "attack": {"name": "backdoor", "poison_fraction": 0.1, "loss_scale": 10.0}, "max_rounds": 2}
    run = runner.build_run(cell, data_dir="unused")
    assert seen["backdoor"] == {"poison_fraction": 0.1}
    assert run.kwargs["attack"].loss_scale == 10.0
    result = run.simulate()
    assert result.status == "max_rounds" and "attack_success" in result.trace[-1]
