"""Rule preprocess: raw files -> data/processed/<dataset>/ (fedrepro.data.Dataset; output: its dataset.json)."""
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
from _common import logged  # noqa: E402

from fedrepro.data import load_dataset  # noqa: E402
from fedrepro.data.dataset import PixelArray  # noqa: E402
from fedrepro.data.plan import split_key  # noqa: E402

with logged(snakemake):
    name, variant = split_key(snakemake.wildcards.dataset)
    ds = load_dataset(name, snakemake.params.cache, snakemake.params.mirror, variant=variant, download=False)
    kind = "sparse" if ds.is_sparse else "uint8 pixels" if isinstance(ds.X, PixelArray) else "dense"
    print(f"{name} ({variant or 'default'}): X {ds.X.shape} {kind}, "
          f"y {ds.y.shape}, groups {sorted(ds.groups)}")
    ds.save(Path(snakemake.output[0]).parent)
