"""DP-FedAvg on MNIST MLP-1 (issue #41 trial, docs/measurements.md): final accuracy against the accountant's
epsilon, 20 clients a round. Usage: python benchmarks/trials/dp_fedavg_table.py DATA_PROCESSED_DIR (prints JSON lines)."""
import hashlib, json, sys, time
import numpy as np
from fedrepro.experiments.runner import build_run

data = sys.argv[1]
base = {"problem": {"name": "neural", "dataset": "mnist", "model": "mlp1", "m": 1000, "partition": "iid"},
        "algorithm": "fedavg_sgd", "params": {"E": 1, "B": 10, "lr": 0.1, "aggregation": "unweighted"},
        "rho": 0.02, "max_rounds": 100, "eval_every": 100, "metrics": ["test_accuracy"]}
C, delta = 0.5, 1e-5
mechs = [("none", None), ("clip", {"name": "clip", "clip": C}),
         ("z=0", {"name": "gaussian", "clip": C, "noise_multiplier": 0.0, "delta": delta})]
mechs += [(f"eps={e:g}", {"name": "gaussian", "clip": C, "epsilon": float(e), "delta": delta})
          for e in (1, 8, 64, 512, 4096)]
rows = []
for label, mech in mechs:
    for seed in (0, 1, 2):
        cell = {**base, "seed": seed, **({"mechanism": mech} if mech else {})}
        t = time.process_time()
        run = build_run(cell, data_dir=data)
        res = run.simulate()
        last = res.trace[-1]
        rows.append({"mechanism": label, "seed": seed, "acc": last["test_accuracy"],
                     "dp_epsilon": last.get("dp_epsilon"), "z": getattr(run.kwargs["mechanism"], "z", None),
                     "clip_fraction": last.get("clip_fraction"),
                     "w_hash": hashlib.sha256(np.ascontiguousarray(res.w).tobytes()).hexdigest()[:12],
                     "cpu": time.process_time() - t})
        print(json.dumps(rows[-1]), flush=True)
