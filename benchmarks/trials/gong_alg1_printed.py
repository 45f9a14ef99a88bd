"""Algorithm 1 as printed against the twin as it ran until 2026-11-28 (FIDELITY GO-7, issue #42).

    OMP_NUM_THREADS=1 python benchmarks/trials/gong_alg1_printed.py --data-dir data/processed > alg1.jsonl

Runs every quick cell of the ``*_alg1`` experiments and the IID m = 100 target cells (benchmarks/gong_targets.py)
twice: as printed (the fragment: batches once per ClientUpdate, momentum 0) and as before (momentum 0.5, batches
reshuffled every epoch). One JSON line per cell: final accuracy (mean of the last 5 rounds) and peak, both ways.
"""
import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", default="data/processed")
    args = ap.parse_args(argv)
    import gong_targets as gt
    from fedrepro.experiments.expansion import expand
    from fedrepro.experiments.spec import as_spec
    from fedrepro.experiments.yamlio import load_paper_fragment
    from fedrepro.experiments.runner import run_cell

    frag = load_paper_fragment("fedadmm_gong", ROOT)["experiments"]
    runs = [(exp, s) for exp in ("table3_alg1", "scaling_alg1", "fig10_alg1")
            for s in map(as_spec, expand("fedadmm_gong", exp, frag[exp], "quick", gt.BASE_SEED))
            if s.algorithm.name == "fedadmm_gong"]
    runs += [("target_cell", s) for ds in ("fashion_mnist", "cifar10") for s in gt.cells_for("local", ds, {0})]
    for exp, spec in runs:
        out = {}
        for name, over in (("printed", {}), ("before", {"momentum": 0.5, "batches": "per_epoch"})):
            df = run_cell(spec.replace(params={**spec.algorithm.params, **over}), data_dir=args.data_dir)
            acc = df.sort_values("round")["test_accuracy"].to_numpy(float)
            out[name] = (float(acc[-5:].mean()), float(acc[1:].max()))
        print(json.dumps({"exp": exp, "dataset": spec.problem.get("dataset"), "setting": spec.columns.get("setting"),
                          "m": spec.problem.get("m"), "partition": spec.problem.get("partition"),
                          "before_final": out["before"][0], "printed_final": out["printed"][0],
                          "before_peak": out["before"][1], "printed_peak": out["printed"][1]}), flush=True)


if __name__ == "__main__":
    main()
