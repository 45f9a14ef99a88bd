"""UCI Adult logistic regression as in FedEPM (Zhou & Li), spec 001 Sec. 4-5.

Data: X (45222, 14) raw integer codes (test rows first, then train; complete
cases only), y in {0, 1}. Preprocessing here:

1. every column scaled to unit Euclidean norm (code ``Normalization(A, 3)``);
   no centring, no intercept;
2. partition per trial: shuffle the rows, m - 1 distinct cut points uniform on
   {2, ..., d - 1}, reject while min_i d_i <= 0.01 d / m (``demon.m``); this is
   :func:`fedrepro.data.partition.random_cuts` with ``cut_points="code"``,
   ``min_frac=0.01``, ``sampler="reject"`` (the literal loop; ``"direct"`` draws
   the same law without a loop);
3. f_i(w) = mean_t [ln(1 + e^{x_t.w}) - b_t x_t.w] + (beta / (2 d_i)) ||w||^2
   (code form, ``reg_scaling="code"``; paper-literal (beta/2)||w||^2 is
   ``"paper"``, spec 7-A5) and f = sum_i f_i (weights 1).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from fedrepro.core.params import NONNEGATIVE, POSITIVE_INT, Anything, Options
from fedrepro.problems.base import problem_spec
from fedrepro.problems.glm import LinearModelProblem, logreg_from_arrays

REG_SCALING = {"code": "per_sample", "paper": "mean", "per_sample": "per_sample", "mean": "mean"}


def load_adult_mat(folder) -> tuple[np.ndarray, np.ndarray]:
    """The authors' preprocessed files ``adult.mat`` (X int32) and ``adultclass.mat`` (y uint8)."""
    from scipy.io import loadmat

    folder = Path(folder)
    X = loadmat(folder / "adult.mat")["X"].astype(np.float64)
    y = loadmat(folder / "adultclass.mat")["y"].ravel().astype(np.float64)
    return X, y


def load_adult(data_dir, dataset: str = "adult") -> tuple[np.ndarray, np.ndarray]:
    """X (45222, 14) float64 raw codes and y (45222,) in {0, 1} from the processed ``<data_dir>/<dataset>/``
    (the dataset loader's output: ``adult`` from the UCI text files, ``adult_mat`` from the
    authors' .mat files; identical arrays), or from the .mat files if ``data_dir`` holds those."""
    from fedrepro.data.dataset import MANIFEST, Dataset

    data_dir = Path(data_dir)
    if (data_dir / dataset / MANIFEST).is_file():
        ds = Dataset.load_shared(data_dir / dataset)
        return np.asarray(ds.X, dtype=np.float64), np.asarray(ds.y, dtype=np.float64)
    if (data_dir / "adult.mat").exists():
        return load_adult_mat(data_dir)
    raise FileNotFoundError(f"adult: neither {data_dir / dataset / MANIFEST} (processed) nor adult.mat found")


def adult_problem(X: np.ndarray, y: np.ndarray, m: int, seed: int, *, beta: float = 1e-3,
                  reg_scaling: str = "code", normalize: str = "col_l2", min_frac=0.01,
                  sampler: str = "reject", kernel: str = "fused") -> LinearModelProblem:
    """FedEPM's federated logistic regression on Adult (see module docstring).

    X : (d, n) raw features; y : (d,) labels in {0, 1}; m clients; ``seed`` drives the
    shuffle and cut points (``fedrepro.core.rng.stream(seed, "partition", ...)``).
    """
    if reg_scaling not in REG_SCALING:
        raise ValueError(f"adult_logreg: reg_scaling={reg_scaling!r} is not allowed; "
                         f"choose one of {sorted(REG_SCALING)}")
    spec = {
        "m": int(m), "lam": float(beta), "reg_scaling": REG_SCALING[reg_scaling], "normalize": normalize,
        "weights": np.ones(int(m)),
        "partition": {"method": "random_cuts", "min_frac": min_frac, "sampler": sampler, "cut_points": "code"},
        "kernel": kernel,
    }
    return logreg_from_arrays(X, y, spec, seed, name=f"adult_logreg(m={int(m)})")


@problem_spec(m=[POSITIVE_INT], beta=[NONNEGATIVE], lam=[NONNEGATIVE], reg_scaling=[Options(*REG_SCALING)],
              normalize=[Options("col_l2", "none")], min_frac=[Anything("a fraction or a preset name")],
              sampler=[Options("reject", "direct")], dataset=[Options("adult", "adult_mat")],
              kernel=[Options("fused", "blas")])
def build_adult_logreg(spec: dict, seed: int, data_dir=None, **kwargs) -> LinearModelProblem:
    """Registry builder. spec keys: m (50), beta (1e-3; alias lam), reg_scaling (code | paper),
    normalize (col_l2 | none), min_frac (0.01), sampler (reject | direct), dataset (adult | adult_mat),
    kernel (fused | blas)."""
    if data_dir is None:
        raise ValueError("adult_logreg needs data_dir (the processed-data folder holding adult/)")
    X, y = load_adult(data_dir, spec.get("dataset", "adult"))
    return adult_problem(X, y, int(spec.get("m", 50)), seed, beta=float(spec.get("beta", spec.get("lam", 1e-3))),
                         reg_scaling=spec.get("reg_scaling", "code"), normalize=spec.get("normalize", "col_l2"),
                         min_frac=spec.get("min_frac", 0.01), sampler=spec.get("sampler", "reject"),
                         kernel=spec.get("kernel", "fused"))
