# Shared set-up: validate the config, expand every experiment into cells, check which
# datasets are in the cache or mirror (no network probe; the rest is skipped unless
# data.download=true, or an error with strict=true).
import re
import sys
from pathlib import Path

from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir)))

from fedrepro.experiments.config import validate_config, validate_experiment
from fedrepro.experiments.build_plan import (batches, check_user_data, experiment_datasets, same_runs, timing_repeats,
                                            user_data_files)
from fedrepro.experiments.expansion import all_cells, load_experiments, reference_cell
from fedrepro.experiments.spec import as_spec
from fedrepro.experiments.yamlio import config_hash, read_yaml
from fedrepro.data.plan import DataPlan, local_datasets, raw_dataset, skipped_experiments
from fedrepro.experiments import resources
from fedrepro.experiments.results import timing_cache
from fedrepro.experiments.report_markdown import provenance_markdown, skipped_markdown
from fedrepro.papers import registry as papers

validate_config(config)          # clear messages naming key, value and what is allowed
validate(config, "../schemas/config.schema.yaml")   # fills schema defaults

# {(paper, experiment): repetitions} of the experiments with a timing pass at this scale
TIMING = {}
for _paper, _exps in load_experiments(config, workflow.basedir).items():
    for _exp_id, _block in _exps.items():
        validate_experiment(_block, f"experiment {_paper}/{_exp_id}")
        _repeats = timing_repeats(_block, config["scale"])
        if _repeats:
            TIMING[(_paper, _exp_id)] = _repeats

# every paper's claims file, before any job: ids, kinds, quoted sources, checks, experiments, scales
from fedrepro.claims.evaluate import load_claims, validate_claims
from fedrepro.experiments.expansion import SCALES

for _paper, _exps in load_experiments(config, workflow.basedir).items():
    if _paper != "custom":
        _claims = load_claims(_paper, workflow.basedir)
        validate_claims(_claims, _paper, papers.checks(_paper, workflow.basedir) if _claims else {}, experiments=set(_exps),
                        scales=SCALES)

# Claim mode (`--config claim=<paper>/<id>`, fedrepro.papers.alone): the build runs only the cells that claim's
# reading needs, at the scale that decides it (a scale given with --config or --configfile wins), and writes
# results/<paper>/claims/<id>.md (workflow/rules/claim_alone.smk); the normal build's results are not touched.
CLAIM = None


def given_scale():
    """The scale given with --config, else with the last --configfile naming one (None: config.yaml's)."""
    given = globals().get("_given") or {}          # the Snakefile's: what --config gave
    if "scale" in given:
        return given["scale"]
    for path in reversed(list(workflow.configfiles)):
        scale = (read_yaml(path) or {}).get("scale")
        if scale is not None:
            return scale
    return None


if config.get("claim"):
    from fedrepro.papers.alone import build_from_config

    CLAIM = build_from_config(config, given_scale=given_scale(), root=workflow.basedir)
    config["scale"] = CLAIM.scale

SCALE = config["scale"]
# the claim named is not part of a cell's provenance (its cells are those of a build at its scale, or new cells)
CONFIG_HASH = config_hash({k: v for k, v in config.items() if k != "claim"})
CELLS = all_cells(config, workflow.basedir) if CLAIM is None else CLAIM.cells
check_user_data(CELLS)           # a problem.data file that is not there is named now, not in a job

# `experiment` matches the declared experiment ids only: a pattern such as
# "(?!claims$)[A-Za-z]\w*" does not stop results/<paper>/claims.parquet from matching rule
# aggregate (inside the full path regex the `$` never follows "claims"), and Snakemake then
# evaluates aggregate's input function for experiment=claims and prints its KeyError.
EXPERIMENT_IDS = sorted({exp for _, exp in CELLS})
if "claims" in EXPERIMENT_IDS:
    raise ValueError("an experiment may not be called 'claims': results/<paper>/claims.parquet "
                     "is the claims table; rename the experiment")
if "partitions" in EXPERIMENT_IDS:
    raise ValueError("an experiment may not be called 'partitions': results/<paper>/partitions.parquet "
                     "is the table of per-client label counts; rename the experiment")

wildcard_constraints:
    paper="[a-z_]+",
    experiment="|".join(map(re.escape, EXPERIMENT_IDS)) or "(?!)",
    batch="[a-z0-9]+",
    dataset="[a-z0-9_]+(-[a-z0-9_]+)?",

CELLS_PER_JOB = int(config.get("cells_per_job", {}).get(config["scale"], 1))
KERNEL_THREADS = int(config.get("kernel_threads", {}).get(config["scale"], 1))
BATCHES = {key: batches(cells, CELLS_PER_JOB) for key, cells in CELLS.items()}
BATCH_OF = {as_spec(c).name: b for bs in BATCHES.values() for b, cs in bs.items() for c in cs}
BATCH_CELLS = {b: cs for bs in BATCHES.values() for b, cs in bs.items()}
DATA = DataPlan(config)
SKIPPED = skipped_experiments(experiment_datasets(CELLS), DATA, strict=config.get("strict", False))
# {cell id: the cell of an earlier experiment whose run it repeats}: its rows are copied, not re-run.
SAME_RUN = same_runs(CELLS, SKIPPED)
# claim mode builds no paper's figures, tables or claims table: only the claim's verdict
OUTPUTS = papers.paper_outputs(config, CELLS, SKIPPED, workflow.basedir) if CLAIM is None else {}


def processed_inputs(cells):
    """The data ``cells`` read: the manifests of their processed datasets (a folder is complete once its
    manifest exists) and the user's own files (problem.data), so that a regenerated file re-runs them."""
    return sorted({f"data/processed/{d}/dataset.json" for c in cells for d in as_spec(c).label.datasets or ()}) \
        + user_data_files(cells)


def batch_path(paper, experiment, batch):
    return f"results/cells/{paper}/{experiment}/{batch}.parquet"


def batch_paths(paper, experiment):
    return [batch_path(paper, experiment, b) for b in BATCHES[(paper, experiment)]]


def cells_of(paper, experiment):
    return CELLS[(paper, experiment)]


def run_cells_of(batch):
    """The batch's cells that run (the others copy an earlier experiment's run)."""
    return [c for c in BATCH_CELLS[batch] if as_spec(c).name not in SAME_RUN]


def copies(batch):
    """{cell id: {"source": the earlier cell with the same run, "path": the file holding it}} for the batch."""
    out = {}
    for cell in BATCH_CELLS[batch]:
        name = as_spec(cell).name
        source = SAME_RUN.get(name)
        if source is not None:
            src = as_spec(source)
            out[name] = {"source": source, "path": batch_path(src.paper, src.experiment, BATCH_OF[src.name])}
    return out


def references(paper, experiment, batch):
    """{cell id: (reference cell id, file holding it)} for the batch's target-stop cells."""
    out = {}
    for cell in BATCH_CELLS[batch]:
        ref = reference_cell(cell, cells_of(paper, experiment))
        if ref is not None:
            name = as_spec(ref).name
            out[as_spec(cell).name] = (name, batch_path(paper, experiment, BATCH_OF[name]))
    return out


REPORT_EXTRAS = [f"results/{name}.{ext}" for name in ("skipped", "provenance") for ext in ("md", "html")]


def all_targets():
    if CLAIM is not None:
        return [f"results/{CLAIM.paper}/claims/{CLAIM.id}{s}" for s in (".md", ".parquet")]
    return [t for paper in OUTPUTS for t in OUTPUTS[paper]["targets"]] + REPORT_EXTRAS


def paper_targets(paper):
    if paper not in OUTPUTS:
        raise ValueError(f"paper {paper!r} is not enabled; add it to `papers:` in config.yaml")
    return OUTPUTS[paper]["targets"]
