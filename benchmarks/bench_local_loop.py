"""Local training: loop over clients vs stacking their parameters (issue #11).

One local SGD step (B = 50, MLP-1 784-200-200-10, logits_ce) of S clients, each with its own
parameters and its own minibatch, two ways:

* ``loop``: S calls of ``Model.loss_and_grad`` + ``SGD.step`` (what
  :mod:`fedrepro.algorithms.local_epochs` does);
* ``stacked``: the S parameter sets as (S, out, in) arrays and one batched ``np.matmul`` per
  layer and pass (forward, weight gradients, input gradients) + one vectorised SGD step --
  a hand-written MLP prototype (the engine has no stacked layers), gradients checked
  against the loop before timing.

Usage (from the repository root, 1 BLAS thread)::

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_local_loop.py [--S 10 100]
    .venv/bin/python benchmarks/bench_local_loop.py --tiny      # seconds: S = 2, 2 steps, 1 repeat (test suite)

Prints the BLAS library, kernel and threads it ran with (:mod:`fedrepro.core.blas`).
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from fedrepro.core.blas import blas_record, describe
from fedrepro.core.rng import stream
from fedrepro.nn import SGD, build_model

B = 50


def stacked_step(Ws, X, y, lr):
    """One SGD step of S stacked MLPs; Ws = [(W1, b1), (W2, b2), (W3, b3)] with W (S, out, in),
    X (S, B, 784), y (S, B). Updates Ws in place; returns the gradients (for the check)."""
    (W1, b1), (W2, b2), (W3, b3) = Ws
    h1 = np.matmul(X, W1.transpose(0, 2, 1)) + b1[:, None, :]
    a1 = np.maximum(h1, 0)
    h2 = np.matmul(a1, W2.transpose(0, 2, 1)) + b2[:, None, :]
    a2 = np.maximum(h2, 0)
    z = np.matmul(a2, W3.transpose(0, 2, 1)) + b3[:, None, :]
    z -= z.max(axis=2, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=2, keepdims=True)
    S = X.shape[0]
    p[np.arange(S)[:, None], np.arange(X.shape[1])[None, :], y] -= 1
    g = p / X.shape[1]
    gW3, gb3 = np.matmul(g.transpose(0, 2, 1), a2), g.sum(axis=1)
    g = np.matmul(g, W3) * (h2 > 0)
    gW2, gb2 = np.matmul(g.transpose(0, 2, 1), a1), g.sum(axis=1)
    g = np.matmul(g, W2) * (h1 > 0)
    gW1, gb1 = np.matmul(g.transpose(0, 2, 1), X), g.sum(axis=1)
    grads = [(gW1, gb1), (gW2, gb2), (gW3, gb3)]
    for (W, b), (gW, gb) in zip(Ws, grads):
        W -= lr * gW
        b -= lr * gb
    return grads


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--S", type=int, nargs="+", default=[10, 100])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--tiny", action="store_true", help="S = 2, 2 steps, 1 repeat (what the test suite runs)")
    args = ap.parse_args()
    if args.tiny:
        args.S, args.steps, args.repeats = [2], 2, 1
    model = build_model("mlp1", head="logits_ce")
    rng = np.random.default_rng(0)
    print(describe())
    for S in args.S:
        w0 = np.stack([model.init(stream(0, "init", k)) for k in range(S)])
        X = rng.random((S, B, 784), dtype=np.float32)
        y = rng.integers(0, 10, (S, B))

        def loop():
            W = w0.copy()
            g = np.empty(model.n_params, np.float32)
            for _ in range(args.steps):
                for j in range(S):
                    model.loss_and_grad(W[j], X[j], y[j], out=g)
                    SGD(0.1).step(W[j], g)
            return W

        def to_stacked(W):
            views = [[p for p in model.unflatten(W[j]) if p] for j in range(S)]
            return [(np.stack([v[L][0] for v in views]), np.stack([v[L][1] for v in views]))
                    for L in range(len(views[0]))]

        def stacked():
            Ws = to_stacked(w0)
            for _ in range(args.steps):
                stacked_step(Ws, X, y, 0.1)
            return Ws

        # check: one step of each gives the same parameters
        Wl = w0.copy()
        g = np.empty(model.n_params, np.float32)
        for j in range(S):
            model.loss_and_grad(Wl[j], X[j], y[j], out=g)
            SGD(0.1).step(Wl[j], g)
        Ws = to_stacked(w0)
        stacked_step(Ws, X, y, 0.1)
        ref = to_stacked(Wl)
        err = max(float(np.abs(a - b).max()) for la, lb in zip(ref, Ws) for a, b in zip(la, lb))
        assert err < 1e-5, err
        res = {}
        for name, fn in (("loop", loop), ("stacked", stacked)) * args.repeats:
            t, c = time.perf_counter(), time.process_time()
            fn()
            res.setdefault(name, []).append((time.perf_counter() - t, time.process_time() - c))
        med = {k: np.median(np.array(v), axis=0) / (args.steps * S) * 1e3 for k, v in res.items()}
        print(f"S={S:4d}: per client-step wall/CPU ms  loop {med['loop'][0]:.3f}/{med['loop'][1]:.3f}  "
              f"stacked {med['stacked'][0]:.3f}/{med['stacked'][1]:.3f}  "
              f"stacked/loop {med['stacked'][1] / med['loop'][1]:.2f} (CPU)  max |diff| one step {err:.1e}")
    print("machine:", blas_record())


if __name__ == "__main__":
    main()
