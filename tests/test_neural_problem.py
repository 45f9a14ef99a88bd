"""Neural models on the one simulation loop: NeuralProblem, the local-epochs harness, FedAvg-SGD."""
from __future__ import annotations

import math
import os
import time

import numpy as np
import pytest

from fedrepro.algorithms import make_algorithm
from fedrepro.core.context import RunContext
from fedrepro.core.rng import stream
from fedrepro.core.sampling import UniformSampler
from fedrepro.data.dataset import Dataset
from fedrepro.nn import ModelSpec, build_model, mlp
from fedrepro.problems import build_problem, problem_class
from fedrepro.problems.neural import NeuralProblem, build_neural, steps_per_epoch
from fedrepro.algorithms.pairing import check_pairing
from fedrepro.problems.protocols import EPOCHS, STOCHASTIC, provides
from fedrepro.sim.loop import simulate

DROP = ModelSpec((12,), mlp((16,), 4, (0.1, 0.2)), "torch", "logits_ce")
PLAIN = ModelSpec((12,), mlp((16,), 4), "torch", "logits_ce")


def toy(spec=PLAIN, sizes=(23, 17, 40, 9, 31), seed=0, test=True, **kw) -> NeuralProblem:
    rng = np.random.default_rng(seed)
    n = sum(sizes)
    X = rng.normal(size=(n, 12)).astype(np.float32)
    y = (X[:, :4].argmax(axis=1)).astype(np.int64)
    parts = np.split(rng.permutation(n), np.cumsum(sizes)[:-1])
    Xt = rng.normal(size=(50, 12)).astype(np.float32) if test else None
    yt = Xt[:, :4].argmax(axis=1) if test else None
    return NeuralProblem(build_model(spec), X, y, parts, Xt, yt, **kw)


def ctx_for(problem, seed=0, rho=1.0):
    return RunContext(seed=seed, rho=rho, sampler=UniformSampler(problem.m, rho, seed))


# ---------------------------------------------------------------- problem

def test_shared_data_no_copies_and_float32():
    p = toy()
    assert p.X.dtype == np.float32 and p.X.flags.c_contiguous and p.dim == build_model(PLAIN).n_params
    assert all(part.dtype == np.int64 for part in p.parts)
    assert p.client_sizes.tolist() == [23, 17, 40, 9, 31] and np.allclose(p.weights, 0.2)
    assert np.allclose(toy(weights="data_size").weights, np.array([23, 17, 40, 9, 31]) / 120)
    with pytest.raises(ValueError, match="weights"):
        toy(weights="bogus")
    with pytest.raises(ValueError, match="labels|must lie"):
        NeuralProblem(build_model(PLAIN), np.zeros((4, 12)), np.array([0, 1, 2, 9]), [np.arange(4)])


def test_grads_of_S_clients_in_one_call_equal_separate_calls():
    p = toy()
    rng = np.random.default_rng(1)
    w0 = p.init_params(stream(0, "init"))
    W = (w0 + 0.1 * rng.normal(size=(3, p.dim))).astype(np.float32)
    S = np.array([4, 0, 2])
    G, L = p.client_grads(W, S), p.client_losses(W, S)
    assert G.dtype == np.float32 and G.shape == (3, p.dim)
    for j, c in enumerate(S):
        np.testing.assert_allclose(G[j], p.client_grads(W[j:j + 1], [c])[0], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(L[j], p.client_losses(W[j], [c])[0], rtol=1e-5)
        # the full client gradient, in chunks, equals one batch over all its data
        loss, g = p.model.loss_and_grad(W[j], p.X[p.parts[c]], p.y[p.parts[c]])
        np.testing.assert_allclose(G[j], g, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(L[j], loss, rtol=1e-5)
    chunked = toy(eval_batch=4)
    np.testing.assert_allclose(chunked.client_grads(W, S), G, rtol=1e-4, atol=1e-5)
    # shared point = one row per client
    np.testing.assert_allclose(p.client_grads(w0, S), p.client_grads(np.tile(w0, (3, 1)), S), rtol=1e-6)


def test_epoch_batches_are_permutations_with_last_partial_batch_kept():
    p = toy()
    c, n = 0, 23
    batches = list(p.epoch_batches(stream(3, "minibatch", 0, c), c, 5, 3))
    assert [b.size for b in batches] == [5, 5, 5, 5, 3] * 3 == [5, 5, 5, 5, 3] * 3
    assert len(batches) == 3 * steps_per_epoch(n, 5) == 3 * math.ceil(n / 5)
    epochs = [np.concatenate(batches[k * 5:(k + 1) * 5]) for k in range(3)]
    for e in epochs:
        assert sorted(e.tolist()) == sorted(p.parts[c].tolist())       # each epoch a permutation
    assert not np.array_equal(epochs[0], epochs[1])                     # reshuffled every epoch
    rng = stream(3, "minibatch", 0, c)                                  # successive epochs from one stream
    for e in epochs:
        np.testing.assert_array_equal(e, p.parts[c][rng.permutation(n)])
    full = list(p.epoch_batches(stream(3, "minibatch", 0, c), c, "full", 2))
    assert len(full) == 2 and all(np.array_equal(b, p.parts[c]) for b in full)
    big = list(p.epoch_batches(stream(3, "minibatch", 0, c), c, 100, 1))   # B > n: one batch
    assert len(big) == 1 and big[0].size == n
    with pytest.raises(ValueError, match="batch size"):
        list(p.epoch_batches(stream(3, "minibatch", 0, c), c, "half", 1))
    assert p.local_steps([0, 3], 5, [2, 3]).tolist() == [2 * 5, 3 * 2]


def test_stochastic_capability():
    p = toy()
    assert provides(p, STOCHASTIC) and provides(p, EPOCHS) and provides(NeuralProblem, EPOCHS)
    idx = p.sample_minibatch(stream(0, "minibatch", 0, 0), np.array([1, 3]), 8)
    assert idx.shape == (2, 8)
    for row, c in zip(idx, (1, 3)):
        assert len(set(row.tolist())) == 8 and set(row.tolist()) <= set(p.parts[c].tolist())
    w = p.init_params(stream(0, "init"))
    G = p.minibatch_grads(np.tile(w, (2, 1)), idx)
    np.testing.assert_allclose(G[1], p.model.loss_and_grad(w, p.X[idx[1]], p.y[idx[1]])[1], rtol=1e-6)
    with pytest.raises(ValueError, match="exceeds"):
        p.sample_minibatch(stream(0, "minibatch", 0, 0), np.array([3]), 10)


def test_metrics_default_to_test_metrics_only():
    p = toy()
    assert p.check_metrics(None) == ("test_loss", "test_accuracy")
    assert set(p.metric_names()) == {"objective", "grad_norm2", "train_accuracy", "test_loss", "test_accuracy"}
    assert toy(test=False).check_metrics(None) == ("objective", "train_accuracy")
    w = p.init_params(stream(0, "init"))
    out = p.evaluate(w, p.metric_names())
    assert out["objective"] == pytest.approx(float(p.weights @ p.client_losses(w)), rel=1e-6)
    g = p.gradient(w)
    np.testing.assert_allclose(g, p.weights @ p.client_grads(w).astype(np.float64), rtol=1e-5, atol=1e-7)
    assert out["grad_norm2"] == pytest.approx(float(g @ g), rel=1e-6)
    acc = np.mean(p.model.predict(w, p.X).argmax(1) == p.y)
    assert out["train_accuracy"] == pytest.approx(acc)
    res = simulate(p, make_algorithm("fedavg_sgd", E=1, B=10), max_rounds=1)
    assert {"test_loss", "test_accuracy"} <= set(res.trace[0]) and "grad_norm2" not in res.trace[0]


# ---------------------------------------------------------------- harness and FedAvg

def run(p, seed=0, rounds=3, **params):
    alg = make_algorithm("fedavg_sgd", **{"lr": 0.1, "E": 2, "B": 8, **params})
    return simulate(p, alg, rho=0.6, max_rounds=rounds, seed=seed,
                    metrics=["objective", "test_accuracy"])


@pytest.mark.parametrize("spec", [PLAIN, DROP])
def test_seeded_runs_are_bit_identical(spec):
    a, b = run(toy(spec), momentum=0.5), run(toy(spec), momentum=0.5)
    assert np.array_equal(a.w, b.w) and a.w.dtype == np.float32
    assert [r["objective"] for r in a.trace] == [r["objective"] for r in b.trace]
    c = run(toy(spec), seed=1, momentum=0.5)
    assert not np.array_equal(a.w, c.w)
    assert a.trace[-1]["objective"] < a.trace[0]["objective"]


def test_dropout_masks_come_from_the_dropout_stream():
    p = toy(DROP)
    alg = make_algorithm("fedavg_sgd", E=1, B=8)
    ctx = ctx_for(p)
    st = alg.init(p, ctx)
    U1 = alg.client_update(st, p, ctx, np.array([0, 2]), 0)
    U2 = alg.client_update(st, p, ctx, np.array([0, 2]), 0)
    np.testing.assert_array_equal(U1, U2)
    plain = make_algorithm("fedavg_sgd", E=1, B=8)
    p_eval = toy(DROP)
    p_eval.batch_loss_grad = lambda w, idx, rng=None, out=None: p_eval.model.loss_and_grad(
        w, p_eval.X[idx], p_eval.y[idx], out=out)                       # dropout off
    assert not np.array_equal(U1, plain.client_update(plain.init(p_eval, ctx), p_eval, ctx, np.array([0, 2]), 0))


def test_shrinking_active_set_counts_steps_exactly():
    p = toy()
    alg = make_algorithm("fedavg_sgd", E=4, B=6, random_epochs=True)
    ctx = ctx_for(p)
    st = alg.init(p, ctx)
    S = np.arange(5)
    for r in range(3):
        alg.client_update(st, p, ctx, S, r)
        E = ctx.rng("epochs", r).integers(1, 5, size=5)
        np.testing.assert_array_equal(st.epochs, E)
        assert ((1 <= E) & (E <= 4)).all()
        expected = [E[j] * math.ceil(p.client_sizes[j] / 6) for j in S]
        assert st.steps.tolist() == expected
    fixed = make_algorithm("fedavg_sgd", E=3, B="full")
    stf = fixed.init(p, ctx)
    fixed.client_update(stf, p, ctx, S, 0)
    assert stf.steps.tolist() == [3] * 5


def test_result_does_not_depend_on_client_order():
    p = toy()
    alg = make_algorithm("fedavg_sgd", E=2, B=7, momentum=0.5, random_epochs=True)
    ctx = ctx_for(p)
    st = alg.init(p, ctx)
    up = alg.client_update(st, p, ctx, np.array([1, 3, 4]), 2)
    # a client's work depends only on (round, client): alone it gives the same row
    E = st.epochs.copy()
    alg_fixed = make_algorithm("fedavg_sgd", E=int(E[1]), B=7, momentum=0.5)
    alone = alg_fixed.client_update(st, p, ctx, np.array([3]), 2)
    np.testing.assert_array_equal(up[1], alone[0])


def test_sample_count_run_setting():
    p = toy(sizes=(10,) * 15)
    seen = {}
    for how in ("ceil", "floor"):
        alg = make_algorithm("fedavg_sgd", E=1, B=5)
        orig = alg.client_update
        alg.client_update = lambda st, pr, ctx, S, r, _o=orig, _h=how: seen.setdefault(_h, []).append(len(S)) or _o(
            st, pr, ctx, S, r)
        simulate(p, alg, rho=0.1, max_rounds=2, sample_count=how)
    assert seen == {"ceil": [2, 2], "floor": [1, 1]}
    with pytest.raises(ValueError, match="sample_count"):
        simulate(p, make_algorithm("fedavg_sgd"), rho=0.1, max_rounds=1, sample_count="round")


def test_fedavg_aggregation_weights():
    p = toy()
    ctx = ctx_for(p)
    for how, weights in (("unweighted", np.ones(2)), ("data_size", p.client_sizes[[1, 2]].astype(float))):
        alg = make_algorithm("fedavg_sgd", aggregation=how)
        st = alg.init(p, ctx)
        U = np.stack([np.full(p.dim, 1.0, np.float32), np.full(p.dim, 4.0, np.float32)])
        alg.receive(st, p, ctx, np.array([1, 2]), U, 0)
        w = alg.aggregate(st, p, ctx, 1)
        assert w.dtype == np.float32
        np.testing.assert_allclose(w, (weights @ U) / weights.sum(), rtol=1e-6)


def test_parameter_constraints():
    for bad in ({"lr": 0}, {"momentum": 1.0}, {"E": 0}, {"B": 0}, {"B": "half"}, {"aggregation": "median"},
                {"random_epochs": 1}):
        with pytest.raises(ValueError, match="fedavg_sgd"):
            make_algorithm("fedavg_sgd", **bad)
    make_algorithm("fedavg_sgd", B="full")
    with pytest.raises(AttributeError):
        make_algorithm("fedavg_sgd").init(toy(), ctx_for(toy())).undeclared = 1


def test_pairings():
    p = toy()
    with pytest.raises(ValueError, match="LipschitzProblem"):
        simulate(p, make_algorithm("fedadmm"), max_rounds=1)
    with pytest.raises(ValueError, match="'fedadmm' cannot run on problem 'neural'"):
        check_pairing(make_algorithm("fedadmm"), NeuralProblem)
    from tests.toys import Quadratic

    with pytest.raises(ValueError, match="EpochProblem.*neural"):
        simulate(Quadratic.random(), make_algorithm("fedavg_sgd"), max_rounds=1)
    assert problem_class("neural") is NeuralProblem


def test_an_existing_full_gradient_algorithm_runs_on_a_neural_problem():
    p = toy()
    res = simulate(p, make_algorithm("sfedavg"), k0=2, max_rounds=2, metrics=["objective", "test_accuracy"])
    assert res.status == "max_rounds" and np.isfinite(res.trace[-1]["objective"])


# ---------------------------------------------------------------- builder

def fake_images(n_train=300, n_test=100, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n_train + n_test)
    X = rng.random((n_train + n_test, 784))
    split = np.array(["train"] * n_train + ["test"] * n_test)
    return Dataset("mnist", X, y, split)


def test_builder_spec_subsets_and_normalisation():
    ds = fake_images()
    p = build_neural({"name": "neural", "model": "mlp1", "m": 10, "train_size": 200, "test_size": 50,
                      "partition": {"method": "label_shards", "k": 2}}, 3, dataset=ds)
    assert p.m == 10 and p.client_sizes.sum() == 200 and len(p.X_test) == 50 and p.dim == 199_210
    train = ds.subset("train")
    counts = np.bincount(p.y, minlength=10)
    assert abs(counts - np.bincount(train.y, minlength=10) * 200 / 300).max() <= 1     # stratified
    row = np.flatnonzero((train.X == (p.X[0] * 0.3081 + 0.1307)[None, :]).all(axis=1) |
                         (np.abs(train.X - (p.X[0] * 0.3081 + 0.1307)).max(axis=1) < 1e-6))
    assert row.size == 1                               # MNIST statistics applied
    same = build_neural({"name": "neural", "m": 10, "train_size": 200}, 3, dataset=ds)
    np.testing.assert_array_equal(same.X, build_neural({"name": "neural", "m": 10, "train_size": 200}, 3,
                                                       dataset=ds).X)
    assert build_problem({"name": "neural", "m": 5, "partition": "iid"}, 0, dataset=ds).m == 5
    with pytest.raises(ValueError, match=r"unknown key\(s\) \[.modle.\]"):
        build_neural({"name": "neural", "modle": "mlp1"}, 0, dataset=ds)
    with pytest.raises(ValueError, match=r"model=.resnet. is not allowed"):
        build_neural({"name": "neural", "model": "resnet"}, 0, dataset=ds)
    with pytest.raises(ValueError, match="train_size"):
        build_neural({"name": "neural", "train_size": 10**6}, 0, dataset=ds)
    with pytest.raises(ValueError, match="does not exist"):
        build_neural({"name": "neural"}, 0, data_dir="/nonexistent")


# ---------------------------------------------------------------- acceptance (MNIST, slow)

def _mnist(mirror, tmp):
    from fedrepro.data import fetch, load

    return load("mnist", fetch("mnist", tmp, mirror, download=False))


@pytest.mark.slow
def test_fedavg_mlp1_mnist_reaches_90_percent_in_10_rounds(mirror, tmp_path_factory):
    ds = _mnist(mirror, tmp_path_factory.mktemp("raw"))
    spec = {"name": "neural", "model": "mlp1", "head": "logits_ce", "dataset": "mnist", "m": 100,
            "partition": {"method": "iid"}}
    runs = []
    for _ in range(2):
        p = build_neural(spec, 0, dataset=ds)
        alg = make_algorithm("fedavg_sgd", lr=0.1, E=5, B=50)
        t, c = time.perf_counter(), time.process_time()
        res = simulate(p, alg, rho=0.1, max_rounds=10, seed=0, sample_count="floor")
        runs.append(res)
        print(f"fedavg mlp1 mnist 10 rounds: wall {time.perf_counter() - t:.1f}s cpu {time.process_time() - c:.1f}s "
              f"acc {[round(r['test_accuracy'], 4) for r in res.trace]}")
    a, b = runs
    assert max(r["test_accuracy"] for r in a.trace) >= 0.90
    assert np.array_equal(a.w, b.w)
    assert [r["test_accuracy"] for r in a.trace] == [r["test_accuracy"] for r in b.trace]


def test_a_config_experiment_on_a_neural_problem_runs_end_to_end(tmp_path):
    """A custom experiment block -> cells (pairing checked at parse time) -> run_cell -> tidy frame
    -> summary -> the generic plots; the job's memory request comes from the estimate."""
    from fedrepro.core.params import ConfigError
    from fedrepro.experiments.expansion import expand
    from fedrepro.experiments.results import summarize
    from fedrepro.experiments.runner import run_cell
    from fedrepro.experiments.resources import cell_memory_mb
    from fedrepro.figures.generic import plot_rounds, plot_sweep

    fake_images().save(tmp_path / "mnist")
    block = {"problem": {"name": "neural", "model": "mlp1", "dataset": "mnist", "m": 10,
                         "partition": {"method": "label_shards", "k": 2}, "train_size": 200},
             "algorithms": {"fedavg_sgd": {"E": 1, "B": 20, "lr": [0.05, 0.1]}},
             "datasets": ["mnist"], "rho": 0.3, "max_rounds": 2, "store": "auto", "seeds": 1}
    cells = expand("custom", "nn", block)
    assert len(cells) == 2 and cells[0]["datasets"] == ["mnist"] and cells[0]["store"] == "auto"
    assert 1024 < cell_memory_mb(cells[0]) < 2500
    frames = [run_cell(c, data_dir=str(tmp_path)) for c in cells]
    df = frames[0]
    assert df["round"].tolist() == [0, 1, 2] and "test_accuracy" in df and "objective" not in df
    import pandas as pd

    both = pd.concat(frames, ignore_index=True)
    summary = summarize(both)
    plot_rounds(both, tmp_path / "rounds")
    plot_sweep(summary, tmp_path / "sweep", metrics=["test_accuracy"])
    assert any(tmp_path.glob("rounds*")) and any(tmp_path.glob("sweep*"))
    with pytest.raises(ConfigError, match="LipschitzProblem"):
        expand("custom", "nn", {**block, "algorithms": {"fedadmm": {}}})
    with pytest.raises(ConfigError, match="fedavg_sgd"):
        expand("custom", "nn", {**block, "algorithms": {"fedavg_sgd": {"B": 0}}})


def test_local_gradient_hook_adds_the_local_objectives_extra_term():
    """The harness's per-step hook (what FedProx / SCAFFOLD / FedADMM build on): a proximal term
    rho (w - theta) keeps the local model near the broadcast one, in proportion to 1/rho."""
    from dataclasses import dataclass

    from fedrepro.algorithms.fedavg_sgd import FedAvgSGD
    from fedrepro.core.params import NONNEGATIVE

    @dataclass
    class Prox(FedAvgSGD):
        rho: float = 0.0
        name = "prox_probe"
        constraints = {"rho": [NONNEGATIVE]}

        def local_gradient(self, state, problem, ctx, j, client, w, g):
            g += np.float32(self.rho) * (w - state.w)

    p = toy()
    ctx = ctx_for(p)
    S = np.array([0, 2, 4])
    drift = {}
    for rho in (0.0, 1.0, 5.0):
        alg = Prox(E=3, B=5, lr=0.1, rho=rho)
        st = alg.init(p, ctx)
        U = alg.client_update(st, p, ctx, S, 0)
        drift[rho] = float(np.linalg.norm(U - st.w, axis=1).mean())
    assert drift[0.0] > drift[1.0] > drift[5.0] > 0
    plain = make_algorithm("fedavg_sgd", E=3, B=5, lr=0.1)
    st = plain.init(p, ctx)
    np.testing.assert_allclose(drift[0.0], float(np.linalg.norm(plain.client_update(st, p, ctx, S, 0) - st.w,
                                                                  axis=1).mean()), rtol=1e-6)


def test_per_dataset_mappings_resolve_and_are_checked_at_parse_time():
    from fedrepro.problems import validate_problem_spec
    from fedrepro.problems.neural import neural_spec_defaults

    spec = {"name": "neural", "model": {"mnist": "mlp1", "cifar10": "mlp2"}, "dataset": "cifar10",
            "train_size": {"mnist": 6000, "cifar10": 4000}, "test_size": 2000}
    out = neural_spec_defaults(spec)
    assert out["model"] == "mlp2" and out["train_size"] == 4000 and out["test_size"] == 2000
    validate_problem_spec(spec)
    with pytest.raises(ValueError, match="model is a per-dataset mapping .* 'fashion_mnist'"):
        validate_problem_spec({**spec, "dataset": "fashion_mnist", "train_size": 10})
    with pytest.raises(ValueError, match="train_size=0 is not allowed"):
        validate_problem_spec({**spec, "train_size": {"cifar10": 0}})
    with pytest.raises(ValueError, match="model='mlp9' is not allowed"):
        validate_problem_spec({**spec, "model": {"cifar10": "mlp9"}})
