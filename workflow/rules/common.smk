# Shared set-up: validate the config, expand every experiment into cells, check which
# datasets are reachable (offline: skip what is missing, unless strict=true).
import sys
from pathlib import Path

from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir)))

from fedrepro.config import validate_config, validate_experiment
from fedrepro.experiments import all_cells, config_hash, load_experiments, reference_cell
from fedrepro import workflow_support as ws

validate_config(config)          # clear messages naming key, value and what is allowed
validate(config, "../schemas/config.schema.yaml")   # fills schema defaults

for _paper, _exps in load_experiments(config, workflow.basedir).items():
    for _exp_id, _block in _exps.items():
        validate_experiment(_block, f"experiment {_paper}/{_exp_id}")

SCALE = config["scale"]
CONFIG_HASH = config_hash(config)
CELLS = all_cells(config, workflow.basedir)
CELL_BY_ID = {c["cell"]: c for cells in CELLS.values() for c in cells}
DATA = ws.DataPlan(config)
SKIPPED = ws.skipped_experiments(CELLS, DATA, strict=config.get("strict", False))
OUTPUTS = ws.paper_outputs(config, CELLS, SKIPPED, workflow.basedir)


def cell_path(cell):
    return f"results/cells/{cell['paper']}/{cell['experiment']}/{cell['cell']}.parquet"


def cells_of(paper, experiment):
    return CELLS[(paper, experiment)]


def all_targets():
    targets = [t for paper in OUTPUTS for t in OUTPUTS[paper]["targets"]]
    return targets + ["results/skipped.md", "results/provenance.md"]


def paper_targets(paper):
    if paper not in OUTPUTS:
        raise ValueError(f"paper {paper!r} is not enabled; add it to `papers:` in config.yaml")
    return OUTPUTS[paper]["targets"]
