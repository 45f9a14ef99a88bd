"""Speed of the numpy NN engine (fedrepro.nn) against PyTorch CPU (issue #11).

Targets (ratio = numpy median wall time / PyTorch median wall time):

* CNN1 training step (B = 50, softmax_ce head, SGD), 1 thread: <= 1.2;
  CNN1 and CNN2 training steps at 2 threads: <= 1.5;
* one FedAvg round of MLP-1 (100 clients x 600 MNIST images, 10 selected, E = 5,
  B = 50, lr 0.1, logits_ce), 1 thread, a plain loop over the clients in both: <= 0.7;
* test-set evaluation of CNN1 on 10,000 MNIST images (batch 256), 1 thread: <= 1.2;
* ``fedavg_sim``: the same FedAvg round through the package's own path -- ``simulate`` with
  a ``NeuralProblem`` (100 clients x 600 images, index sets into one array) and
  ``fedavg_sgd`` (E = 5, B = 50, lr 0.1, 10 of 100 clients) -- against the same PyTorch
  loop: <= 0.7. One ``simulate(max_rounds=1)`` call: sampling, the round, the server average
  and two evaluations of ``test_accuracy`` on 1,000 test images (rounds 0 and 1).

Every (thread count, interpreter, BLAS kernel setting) runs in its own subprocess with
OMP/OPENBLAS/MKL_NUM_THREADS set (and ``torch.set_num_threads``). Kernel settings
(``--kernels``, the subprocess's environment only): ``own`` removes OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE (OpenBLAS picks its kernel for this CPU), ``haswell`` sets
OPENBLAS_CORETYPE=Haswell and OPENBLAS_L2_SIZE (``--l2-size``, default this CPU's per-core
L2 in bytes), ``inherit`` leaves the environment as it is. Every subprocess records, with
threadpoolctl, which BLAS library, kernel and thread count numpy ran (and PyTorch's version,
threads, CPU capability and BLAS: it links MKL statically, which threadpoolctl cannot see,
so the OpenBLAS variables do not reach it). ``--python`` runs the workers with other
interpreters (throw-away venvs with different PyTorch versions) in the same command.

Both engines start from the same weights (the flat vector sliced into PyTorch's
parameters in module order); loss and gradient are checked to agree before anything
is timed. numpy and PyTorch repeats are
interleaved (order alternating) so machine load hits both alike; medians of wall
and process CPU time are reported with the load average. GFLOP/s are compared
with the sgemm peak (float32 2048^3 matmul) measured in the same subprocess: the
``%peak`` column is the engine's GFLOP per CPU-second over sgemm's (load-independent).
PyTorch is optional (never a dependency): without it only the numpy side runs.

Usage, from the repository root (MNIST from the cache or $FEDREPRO_DATA_MIRROR;
``--synthetic`` uses uniform float32 images of the same shapes instead)::

    python benchmarks/bench_nn.py [--threads 1 2] [--repeats 15] [--only cnn1_step fedavg_mlp1]
        [--kernels own haswell] [--python /tmp/torch2141/bin/python /tmp/torch2130/bin/python]
    python benchmarks/bench_nn.py --tiny      # seconds: synthetic images, 1 repeat (the test suite)

With PyTorch, from throw-away venvs outside the repository (see benchmarks/README.md)::

    python benchmarks/bench_nn.py --python /tmp/torch2141/bin/python /tmp/torch2130/bin/python

Writes ``benchmarks/out/bench_nn.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))       # fedrepro from this checkout, also in a venv that does not install it
from fedrepro.core.blas import (KERNEL_VARIABLES, blas_record, cpu_model, describe,  # noqa: E402
                                describe_kernel_env, describe_libraries)
BATCH = 50
EVAL_BATCH = 256
# (benchmark, threads) -> target ratio numpy / torch
TARGETS = {("cnn1_step", 1): 1.2, ("cnn1_step", 2): 1.5, ("cnn2_step", 2): 1.5,
           ("fedavg_mlp1", 1): 0.7, ("eval_cnn1", 1): 1.2, ("fedavg_sim", 1): 0.7}
BENCHES = ("cnn1_step", "cnn2_step", "fedavg_mlp1", "eval_cnn1", "fedavg_sim")
#: --tiny's FedAvg round: 2 of 10 clients x 100 images, one epoch (4 SGD steps)
TINY_ROUND = {"n_clients": 10, "per_client": 100, "selected": 2, "epochs": 1}
# benchmarks run at a thread count only when they have a target there (or --all-threads)
DEFAULT_PLAN = {1: ("cnn1_step", "cnn2_step", "fedavg_mlp1", "eval_cnn1", "fedavg_sim"), 2: ("cnn1_step", "cnn2_step")}


# ---------------------------------------------------------------- data
def load_images(synthetic: bool, data_dir: str, mirror: str | None, n_train: int = 60000, n_test: int = 10000):
    """MNIST as float32 (N, 1, 28, 28) in [0, 1]: (Xtrain, ytrain, Xtest, ytest, source)."""
    if not synthetic:
        from fedrepro.data import load_dataset

        ds = load_dataset("mnist", cache_dir=data_dir, mirror=mirror, download=False)
        X = np.asarray(ds.X, dtype=np.float32).reshape(-1, 1, 28, 28)
        y = ds.y.astype(np.int64)
        tr = ds.split == "train"
        return X[tr], y[tr], X[~tr], y[~tr], "MNIST (fedrepro.data, pixel/255, float32)"
    g = np.random.default_rng(0)
    return (g.random((n_train, 1, 28, 28), dtype=np.float32), g.integers(0, 10, n_train),
            g.random((n_test, 1, 28, 28), dtype=np.float32), g.integers(0, 10, n_test),
            "synthetic uniform float32 of MNIST's shapes")


# ---------------------------------------------------------------- FLOPs
def step_flops(model, batch: int, train: bool) -> float:
    """Multiply-adds x 2 of the GEMM-shaped layers: forward; training adds the weight
    gradient and the input gradient of every parametrised layer but the first."""
    from fedrepro.nn import Conv2d, Dense

    fwd = bwd = 0.0
    first = True
    for layer, in_shape, out_shape in zip(model.layers, model.shapes[:-1], model.shapes[1:]):
        if isinstance(layer, Conv2d):
            f = 2.0 * batch * out_shape[1] * out_shape[2] * layer.out_channels * in_shape[0] * layer.kernel_size ** 2
        elif isinstance(layer, Dense):
            f = 2.0 * batch * in_shape[0] * layer.out_features
        else:
            continue
        fwd += f
        bwd += f if first else 2 * f
        first = False
    return fwd + bwd if train else fwd


def sgemm_peak(n: int = 2048, repeats: int = 5) -> dict:
    a = np.random.default_rng(1).random((n, n), dtype=np.float32)
    b = a.T.copy()
    c = np.empty_like(a)
    np.matmul(a, b, out=c)
    wall, cpu = [], []
    for _ in range(repeats):
        t, p = time.perf_counter(), time.process_time()
        np.matmul(a, b, out=c)
        wall.append(time.perf_counter() - t)
        cpu.append(time.process_time() - p)
    f = 2.0 * n ** 3
    return {"n": n, "gflops_wall_best": f / min(wall) / 1e9, "gflops_wall_median": f / float(np.median(wall)) / 1e9,
            "gflops_cpu_median": f / float(np.median(cpu)) / 1e9}


# ---------------------------------------------------------------- PyTorch twin
def torch_twin(model, w):
    """A torch.nn.Sequential with the engine model's architecture and the weights ``w``."""
    import torch
    from torch import nn

    from fedrepro.nn import Conv2d, Dense, Dropout, Flatten, MaxPool2d, ReLU

    mods = []
    for layer, in_shape in zip(model.layers, model.shapes[:-1]):
        if isinstance(layer, Conv2d):
            mods.append(nn.Conv2d(in_shape[0], layer.out_channels, layer.kernel_size, layer.stride,
                                  layer.padding, bias=layer.bias))
        elif isinstance(layer, Dense):
            mods.append(nn.Linear(in_shape[0], layer.out_features, bias=layer.bias))
        elif isinstance(layer, MaxPool2d):
            mods.append(nn.MaxPool2d(layer.kernel_size))
        elif isinstance(layer, Flatten):
            mods.append(nn.Flatten())
        elif isinstance(layer, ReLU):
            mods.append(nn.ReLU())
        elif isinstance(layer, Dropout):
            mods.append(nn.Dropout(layer.p))
        else:
            raise TypeError(f"no PyTorch twin for {layer!r}")
    net = nn.Sequential(*mods)
    set_torch_weights(net, model, w)
    return net


def set_torch_weights(net, model, w):
    import torch

    sd = net.state_dict()
    if len(sd) != len(model.slots):
        raise AssertionError(f"{len(sd)} torch tensors vs {len(model.slots)} engine slots")
    new = {}
    for (key, ref), slot in zip(sd.items(), model.slots):
        if tuple(ref.shape) != slot.shape:
            raise AssertionError(f"{key}: torch shape {tuple(ref.shape)} vs engine {slot.shape}")
        new[key] = torch.from_numpy(np.array(w[slot.start:slot.stop]).reshape(slot.shape))
    net.load_state_dict(new)


def torch_flat(net) -> np.ndarray:
    return np.concatenate([t.detach().numpy().ravel() for t in net.state_dict().values()])


def torch_loss(z, y, head: str):
    import torch.nn.functional as F

    return F.cross_entropy(F.softmax(z, dim=1) if head == "softmax_ce" else z, y)


def check_agreement(model, w, X, y, head, net) -> dict:
    """Loss and gradient of one batch agree between the engine and PyTorch."""
    import torch

    loss, g = model.loss_and_grad(w, X, y, head=head)
    net.zero_grad()
    tl = torch_loss(net(torch.from_numpy(X)), torch.from_numpy(y), head)
    tl.backward()
    tg = np.concatenate([p.grad.numpy().ravel() for p in net.parameters()])
    rel_loss = abs(loss - tl.item()) / abs(tl.item())
    rel_grad = float(np.linalg.norm(g - tg) / np.linalg.norm(tg))
    if rel_loss > 1e-4 or rel_grad > 1e-3:
        raise AssertionError(f"{model.name}: engine and PyTorch disagree: loss {loss} vs {tl.item()}, "
                             f"relative gradient difference {rel_grad:.2e}")
    return {"loss_numpy": loss, "loss_torch": tl.item(), "rel_grad_diff": rel_grad}


# ---------------------------------------------------------------- benchmark bodies
def make_step(name, data, have_torch):
    """(numpy_fn, torch_fn, flops, sanity) of one training step at B = 50."""
    from fedrepro.nn import SGD, build_model
    from fedrepro.core.rng import stream

    model = build_model(name[:4])
    w0 = model.init(stream(0, "init", 1 + BENCHES.index(name)))
    if name.startswith("cnn1"):
        X, y = data[0][:BATCH].copy(), data[1][:BATCH].copy()
    else:
        g = np.random.default_rng(2)
        X, y = g.random((BATCH, 3, 32, 32), dtype=np.float32), g.integers(0, 10, BATCH)
    w, grad, opt = w0.copy(), np.empty_like(w0), SGD(lr=0.01)

    def np_fn():
        model.loss_and_grad(w, X, y, out=grad)
        opt.step(w, grad)

    t_fn, sanity = None, {}
    if have_torch:
        import torch

        net = torch_twin(model, w0)
        sanity = check_agreement(model, w0, X, y, model.head, net)
        topt = torch.optim.SGD(net.parameters(), lr=0.01)
        Xt, yt = torch.from_numpy(X), torch.from_numpy(y)

        def t_fn():
            topt.zero_grad()
            torch_loss(net(Xt), yt, model.head).backward()
            topt.step()
    return np_fn, t_fn, step_flops(model, BATCH, True), sanity


def make_fedavg(data, have_torch, n_clients=100, per_client=600, selected=10, epochs=5, lr=0.1):
    """One FedAvg round of MLP-1 (logits_ce): every selected client starts from the global
    weights, runs E epochs of minibatch SGD, the server averages (equal client sizes)."""
    from fedrepro.nn import SGD, build_model
    from fedrepro.core.rng import stream

    model = build_model("mlp1", head="logits_ce")
    w0 = model.init(stream(0, "init", 3))
    Xtr, ytr = data[0], data[1]
    g = stream(0, "sampling", 3)
    idx = g.permutation(len(Xtr))[:n_clients * per_client].reshape(n_clients, per_client)
    chosen = g.choice(n_clients, selected, replace=False)
    Xc = [np.ascontiguousarray(Xtr[idx[k]].reshape(per_client, -1)) for k in chosen]
    yc = [ytr[idx[k]] for k in chosen]
    # the same minibatch order in both engines
    batches = [[p[s:s + BATCH] for p in (g.permutation(per_client) for _ in range(epochs))
                for s in range(0, per_client, BATCH)] for _ in chosen]
    grad = np.empty_like(w0)

    def np_fn():
        acc = np.zeros_like(w0)
        for X, y, bl in zip(Xc, yc, batches):
            w, opt = w0.copy(), SGD(lr=lr)
            for b in bl:
                model.loss_and_grad(w, X[b], y[b], out=grad)
                opt.step(w, grad)
            acc += w
        acc /= len(Xc)
        return acc

    t_fn, sanity = None, {}
    if have_torch:
        import torch
        import torch.nn.functional as F

        net = torch_twin(model, w0)
        sanity = check_agreement(model, w0, Xc[0][:BATCH], yc[0][:BATCH], "logits_ce", net)
        sd0 = {k: v.clone() for k, v in net.state_dict().items()}
        Xt = [torch.from_numpy(X) for X in Xc]
        yt = [torch.from_numpy(y) for y in yc]
        bt = [[torch.from_numpy(b) for b in bl] for bl in batches]

        def t_fn():
            acc = {k: torch.zeros_like(v) for k, v in sd0.items()}
            for X, y, bl in zip(Xt, yt, bt):
                net.load_state_dict(sd0)
                opt = torch.optim.SGD(net.parameters(), lr=lr)
                for b in bl:
                    opt.zero_grad()
                    F.cross_entropy(net(X[b]), y[b]).backward()
                    opt.step()
                for k, v in net.state_dict().items():
                    acc[k] += v
            for v in acc.values():
                v /= len(Xt)
            net.load_state_dict(acc)
            return acc

        # the two rounds end at nearly the same global model (float32 rounding only)
        wn = np_fn()
        t_fn()
        wt = torch_flat(net)
        sanity["round_max_abs_weight_diff"] = float(np.abs(wn - wt).max())
        sanity["round_rel_weight_diff"] = float(np.linalg.norm(wn - wt) / np.linalg.norm(wn - w0))
        if sanity["round_rel_weight_diff"] > 1e-2:
            raise AssertionError(f"FedAvg rounds disagree: {sanity}")
    steps = selected * epochs * (per_client // BATCH)
    return np_fn, t_fn, steps * step_flops(model, BATCH, True), sanity


def make_fedavg_sim(data, have_torch, n_clients=100, per_client=600, selected=10, epochs=5, lr=0.1):
    """One FedAvg round through ``simulate``: NeuralProblem (clients = index sets into one
    array) + ``fedavg_sgd``; the PyTorch side is :func:`make_fedavg`'s loop (same work: 10
    clients x 60 SGD steps of B = 50 from the global weights, then the mean)."""
    from fedrepro.algorithms import make_algorithm
    from fedrepro.core.rng import stream
    from fedrepro.core.sampling import UniformSampler
    from fedrepro.nn import build_model
    from fedrepro.problems.neural import NeuralProblem
    from fedrepro.sim.loop import simulate

    Xtr, ytr, Xte, yte = data[0], data[1], data[2], data[3]
    order = stream(0, "partition", 3).permutation(len(Xtr))[:n_clients * per_client]
    parts = np.split(order, n_clients)
    problem = NeuralProblem(build_model("mlp1", head="logits_ce"), Xtr, ytr, parts, Xte[:1000], yte[:1000])
    sampler = UniformSampler(n_clients, selected / n_clients, 0, "floor")
    runs = []

    def np_fn():
        alg = make_algorithm("fedavg_sgd", lr=lr, E=epochs, B=BATCH, aggregation="unweighted")
        res = simulate(problem, alg, rho=selected / n_clients, max_rounds=1, seed=0, sampler=sampler,
                       metrics=["test_accuracy"])
        runs.append(res)
        return res.w

    t_fn = make_fedavg(data, have_torch, n_clients, per_client, selected, epochs, lr)[1]
    np_fn()
    steps = selected * epochs * (per_client // BATCH)
    sanity = {"rounds": runs[0].rounds, "round_local_s": runs[0].local_time,
              "test_accuracy_after_round": runs[0].trace[-1]["test_accuracy"]}
    model = problem.model
    return np_fn, t_fn, steps * step_flops(model, BATCH, True), sanity


def make_eval(data, have_torch):
    from fedrepro.nn import build_model, evaluate
    from fedrepro.core.rng import stream

    model = build_model("cnn1")
    w0 = model.init(stream(0, "init", 4))
    Xte, yte = data[2], data[3]
    out = {}

    def np_fn():
        out["numpy"] = evaluate(model, w0, Xte, yte, batch=EVAL_BATCH)

    t_fn, sanity = None, {}
    if have_torch:
        import torch

        net = torch_twin(model, w0)
        sanity = check_agreement(model, w0, Xte[:BATCH], yte[:BATCH], model.head, net)
        net.eval()
        Xt, yt = torch.from_numpy(Xte), torch.from_numpy(yte)

        def t_fn():
            loss, correct = 0.0, 0
            with torch.inference_mode():
                for s in range(0, len(Xt), EVAL_BATCH):
                    z = net(Xt[s:s + EVAL_BATCH])
                    yb = yt[s:s + EVAL_BATCH]
                    loss += torch_loss(z, yb, model.head).item() * len(yb)
                    correct += int((z.argmax(1) == yb).sum())
            out["torch"] = {"accuracy": correct / len(Xt), "loss": loss / len(Xt)}

        np_fn()
        t_fn()
        sanity.update({f"{k}_{e}": v for e, r in out.items() for k, v in r.items()})
        if abs(out["numpy"]["accuracy"] - out["torch"]["accuracy"]) > 1e-3 or \
                abs(out["numpy"]["loss"] - out["torch"]["loss"]) > 1e-4 * abs(out["torch"]["loss"]):
            raise AssertionError(f"evaluations disagree: {out}")
    return np_fn, t_fn, len(Xte) * step_flops(model, 1, False), sanity


def time_pair(np_fn, t_fn, repeats: int, warmup: int) -> dict:
    """Interleaved repeats (numpy/torch order alternating); wall and CPU seconds per run."""
    fns = {"numpy": np_fn} | ({"torch": t_fn} if t_fn else {})
    for _ in range(warmup):
        for f in fns.values():
            f()
    res = {k: {"wall": [], "cpu": []} for k in fns}
    keys = list(fns)
    for r in range(repeats):
        for k in (keys if r % 2 == 0 else keys[::-1]):
            t, p = time.perf_counter(), time.process_time()
            fns[k]()
            res[k]["wall"].append(time.perf_counter() - t)
            res[k]["cpu"].append(time.process_time() - p)
    return res


# ---------------------------------------------------------------- worker / driver
def torch_record(torch) -> dict:
    """PyTorch's version, threads, CPU capability and the BLAS / oneDNN it was built with."""
    config = torch.__config__.show()
    built = [line.strip(" -") for line in config.splitlines()
             if "Math Kernel Library" in line or "MKL-DNN" in line or "OpenBLAS" in line]
    blas_info = next((part.split("=", 1)[1] for part in config.replace(",", " ").split()
                      if part.startswith("BLAS_INFO=")), None)
    return {"version": torch.__version__, "threads": torch.get_num_threads(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "blas_info": blas_info, "built_with": built}


def worker(args) -> dict:
    try:
        import torch
        torch.set_num_threads(args.worker)
        have_torch = True
    except ImportError:
        torch, have_torch = None, False
    data = load_images(args.synthetic, args.data_dir, args.mirror, *((TINY_ROUND["n_clients"] * TINY_ROUND["per_client"],
                                                                      EVAL_BATCH) if args.tiny else ()))
    round_size = TINY_ROUND if args.tiny else {}
    peak = sgemm_peak(512 if args.tiny else 2048)
    plan = args.only or DEFAULT_PLAN.get(args.worker, BENCHES)
    out = {"threads": args.worker, "kernel_setting": args.kernel_setting, "python": sys.executable,
           "torch": torch.__version__ if have_torch else None, "torch_record": torch_record(torch) if have_torch else None,
           "numpy": np.__version__, "data": data[4], "sgemm": peak, "benches": {}}
    for name in plan:
        if name.endswith("_step"):
            np_fn, t_fn, flops, sanity = make_step(name[:4] + "_step", data, have_torch)
            reps, warm = args.repeats, 2
        elif name == "fedavg_mlp1":
            np_fn, t_fn, flops, sanity = make_fedavg(data, have_torch, **round_size)
            reps, warm = max(3, args.repeats // 3), 1
        elif name == "fedavg_sim":
            np_fn, t_fn, flops, sanity = make_fedavg_sim(data, have_torch, **round_size)
            reps, warm = max(3, args.repeats // 3), 1
        else:
            np_fn, t_fn, flops, sanity = make_eval(data, have_torch)
            reps, warm = max(3, args.repeats // 3), 0     # make_eval already ran each once
        load0 = os.getloadavg()[0]
        times = time_pair(np_fn, t_fn, reps, warm)
        out["benches"][name] = {"flops": flops, "repeats": reps, "sanity": sanity, "times": times,
                                "loadavg_1min": [load0, os.getloadavg()[0]]}
    out["machine"] = blas_record()      # after the benches: every library they loaded is listed
    return out


def summarise(runs: list[dict]) -> list[dict]:
    rows = []
    for run in runs:
        t = run["threads"]
        numpy_blas = describe_libraries(run["machine"]["blas"])
        for name, b in run["benches"].items():
            med = {k: {m: float(np.median(v[m])) for m in ("wall", "cpu")} for k, v in b["times"].items()}
            row = {"bench": name, "threads": t, "numpy_ms": 1e3 * med["numpy"]["wall"],
                   "numpy_cpu_ms": 1e3 * med["numpy"]["cpu"],
                   "numpy_gflops": b["flops"] / med["numpy"]["wall"] / 1e9,
                   # per CPU-second, so that load does not enter: GFLOP per CPU-s / sgemm's
                   "pct_sgemm_peak": 100 * b["flops"] / med["numpy"]["cpu"] / 1e9 / run["sgemm"]["gflops_cpu_median"],
                   "loadavg": max(b["loadavg_1min"]), "target": TARGETS.get((name, t)),
                   "kernel_setting": run["kernel_setting"], "numpy_blas": numpy_blas,
                   "kernel_env": describe_kernel_env(run["machine"]["kernel_env"]), "torch": run["torch"]}
            if "torch" in med:
                row.update({"torch_ms": 1e3 * med["torch"]["wall"], "torch_cpu_ms": 1e3 * med["torch"]["cpu"],
                            "ratio_wall": med["numpy"]["wall"] / med["torch"]["wall"],
                            "ratio_cpu": med["numpy"]["cpu"] / med["torch"]["cpu"]})
                if row["target"] is not None:
                    row["met"] = row["ratio_wall"] <= row["target"]
            rows.append(row)
    return rows


def print_table(rows, runs):
    for i, run in enumerate(runs):
        s, m = run["sgemm"], run["machine"]
        t = run["torch_record"]
        print(f"run {i}: {run['threads']} thread(s), kernel setting {run['kernel_setting']}: "
              f"numpy {run['numpy']}, {describe(m)}; "
              + (f"torch {t['version']} ({t['threads']} threads, {t['cpu_capability']}, BLAS {t['blas_info']}; "
                 f"{'; '.join(t['built_with'])})" if t else "no torch")
              + f"; sgemm {s['n']}^3 best {s['gflops_wall_best']:.1f} GFLOP/s (median {s['gflops_wall_median']:.1f}, "
              f"per CPU-second {s['gflops_cpu_median']:.1f}); data: {run['data']}")
    head = (f"{'bench':<12} {'thr':>3} {'kernel':<9} {'torch':<12} {'numpy ms':>9} {'cpu ms':>8} {'torch ms':>9} "
            f"{'cpu ms':>8} {'ratio':>6} {'cpu r.':>6} {'target':>6} {'met':>4} {'GFLOP/s':>8} {'%peak':>6} {'load':>5}")
    print(head)
    print("-" * len(head))
    for r, run in zip(rows, (run for run in runs for _ in run["benches"])):
        f = lambda k, fmt: format(r[k], fmt) if r.get(k) is not None else "-"
        met = {True: "yes", False: "NO"}.get(r.get("met"), "-")
        kernel = "/".join(sorted({lib["architecture"] or "?" for lib in run["machine"]["blas"]}))
        print(f"{r['bench']:<12} {r['threads']:>3} {kernel:<9} {r['torch'] or '-':<12} {f('numpy_ms', '9.1f')} "
              f"{f('numpy_cpu_ms', '8.1f')} {f('torch_ms', '9.1f'):>9} {f('torch_cpu_ms', '8.1f'):>8} "
              f"{f('ratio_wall', '6.2f'):>6} {f('ratio_cpu', '6.2f'):>6} {f('target', '6.1f'):>6} {met:>4} "
              f"{f('numpy_gflops', '8.1f')} {f('pct_sgemm_peak', '6.0f')} {f('loadavg', '5.1f')}")


def l2_cache_bytes() -> int | None:
    """This CPU's per-core L2 cache in bytes (sysfs), or None where it cannot be read."""
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            if (index / "level").read_text().strip() == "2":
                size = (index / "size").read_text().strip()
                return int(size[:-1]) * {"K": 2**10, "M": 2**20}[size[-1]] if size[-1] in "KM" else int(size)
        except (OSError, ValueError):
            continue
    return None


def kernel_environment(setting: str, l2_size: int | None) -> dict:
    """The subprocess environment of one kernel setting (see the module docstring)."""
    env = dict(os.environ)
    if setting == "own":
        for name in KERNEL_VARIABLES:
            env.pop(name, None)
    elif setting == "haswell":
        if l2_size is None:
            raise SystemExit("--kernels haswell: the L2 size could not be read; give --l2-size BYTES")
        env.update(OPENBLAS_CORETYPE="Haswell", OPENBLAS_L2_SIZE=str(l2_size))
    return env


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--repeats", type=int, default=15, help="repeats of a training step (FedAvg/eval: a third)")
    ap.add_argument("--only", nargs="+", choices=BENCHES, help="benchmarks to run at every thread count")
    ap.add_argument("--kernels", nargs="+", default=["own", "haswell"], choices=["own", "haswell", "inherit"],
                    help="BLAS kernel settings, each in its own subprocess (see the module docstring)")
    ap.add_argument("--l2-size", type=int, default=l2_cache_bytes(),
                    help="OPENBLAS_L2_SIZE of the haswell setting (default: this CPU's per-core L2 in bytes)")
    ap.add_argument("--python", nargs="+", default=[sys.executable],
                    help="interpreters to run the workers with (venvs with different PyTorch versions)")
    ap.add_argument("--synthetic", action="store_true", help="uniform float32 images instead of MNIST")
    ap.add_argument("--tiny", action="store_true", help="seconds: synthetic images, 1 repeat, 1 thread, CNN 1 step "
                    "and a FedAvg round of 2 of 10 small clients, the environment's kernel (what the test suite runs)")
    ap.add_argument("--data-dir", default=str(ROOT / "data" / "raw"), help="raw-data cache")
    ap.add_argument("--mirror", default=None, help="data mirror (default: $FEDREPRO_DATA_MIRROR)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "out" / "bench_nn.json"))
    ap.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--kernel-setting", default="inherit", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tiny:
        args.synthetic, args.repeats, args.threads, args.kernels = True, 1, [1], ["inherit"]
        args.only = args.only or ["cnn1_step", "fedavg_mlp1"]
    if args.repeats < 1 or any(t < 1 for t in args.threads):
        ap.error("--repeats and --threads must be >= 1")
    if args.worker is not None:
        json.dump(worker(args), sys.stdout)
        return
    runs = []
    # the kernel settings and interpreters of one thread count run back to back (the same machine load)
    for t in args.threads:
        for python in args.python:
            for setting in args.kernels:
                env = kernel_environment(setting, args.l2_size)
                env.update(OMP_NUM_THREADS=str(t), OPENBLAS_NUM_THREADS=str(t), MKL_NUM_THREADS=str(t),
                           PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
                cmd = [python, __file__, "--worker", str(t), "--kernel-setting", setting, "--repeats",
                       str(args.repeats), "--data-dir", args.data_dir] \
                    + (["--mirror", args.mirror] if args.mirror else []) + (["--synthetic"] if args.synthetic else []) \
                    + (["--tiny"] if args.tiny else []) + (["--only", *args.only] if args.only else [])
                print(f"[bench_nn] {t} thread(s), kernel {setting}, {python} ...", file=sys.stderr, flush=True)
                proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, check=True, text=True)
                runs.append(json.loads(proc.stdout))
    rows = summarise(runs)
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {cpu_model()}, "
          f"{os.cpu_count()} CPUs, load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"driver: {describe()}")
    print_table(rows, runs)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                                          "cpus": os.cpu_count(), "argv": sys.argv, "machine": blas_record(),
                                          "rows": rows, "runs": runs}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
