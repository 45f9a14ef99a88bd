"""Fig. 8's Options I and II as printed against the runs as they were until 2026-11-28 (FIDELITY GO-7, issue #42).

    OMP_NUM_THREADS=1 python benchmarks/trials/gong_fig8_printed.py --data-dir data/processed > fig8.jsonl

Runs every cell of ``fig8`` (Option I ``local`` and Option II ``global``, eta in {0.5, 1}, MNIST and CIFAR-10,
IID and non-IID) at the given scale twice: as printed (the fragment: batches once per ClientUpdate, momentum 0)
and as before (momentum 0.5, batches reshuffled every epoch). One JSON line per cell: final accuracy (mean of the
last 5 rounds) and peak, both ways; then one line per panel, eta and seed: Option I minus Option II in final
accuracy (pp), both ways (the quantity of claim q6_option1_superior).
"""
import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default="data/processed")
    ap.add_argument("--scale", default="quick", choices=("quick", "verify"))
    args = ap.parse_args(argv)
    import gong_targets as gt
    from fedrepro.experiments.expansion import expand
    from fedrepro.experiments.spec import as_spec
    from fedrepro.experiments.yamlio import load_paper_fragment
    from fedrepro.experiments.runner import run_cell

    frag = load_paper_fragment("fedadmm_gong", ROOT)["experiments"]
    runs = [s for s in map(as_spec, expand("fedadmm_gong", "fig8", frag["fig8"], args.scale, gt.BASE_SEED))
            if s.algorithm.name == "fedadmm_gong"]
    final = defaultdict(dict)
    for spec in runs:
        out = {}
        for name, over in (("printed", {}), ("before", {"momentum": 0.5, "batches": "per_epoch"})):
            df = run_cell(spec.replace(params={**spec.algorithm.params, **over}), data_dir=args.data_dir)
            acc = df.sort_values("round")["test_accuracy"].to_numpy(float)
            out[name] = (float(acc[-5:].mean()), float(acc[1:].max()))
        p = spec.algorithm.params
        key = (spec.problem.get("dataset"), spec.problem.get("partition"), p["eta"], spec.seed)
        final[key][p["local_init"]] = {k: v[0] for k, v in out.items()}
        print(json.dumps({"exp": "fig8", "dataset": key[0], "partition": key[1], "eta": key[2], "seed": key[3],
                          "local_init": p["local_init"], "before_final": out["before"][0],
                          "printed_final": out["printed"][0], "before_peak": out["before"][1],
                          "printed_peak": out["printed"][1]}), flush=True)
    for key, by in final.items():
        if {"local", "global"} <= set(by):
            print(json.dumps({"panel": list(key), **{f"{w}_option1_minus_option2_pp": 100 * (by["local"][w] -
                                                                                        by["global"][w])
                                                     for w in ("before", "printed")}}), flush=True)


if __name__ == "__main__":
    main()
