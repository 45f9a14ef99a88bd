# fedrepro — regenerate the figures, tables and claims of five federated-learning papers.
#   snakemake -j 2                      everything at the quick scale (default target `all`)
#   snakemake -j 2 fedepm               one paper (keys: `fedrepro list`, the folders of fedrepro/papers/)
#   snakemake -j 2 custom               only the experiments under config.yaml's own `experiments:` (not the papers')
#   snakemake -j 2 figures/fedepm/fig3.pdf
#   snakemake -j 2 --config scale=paper       the papers' full sweeps (see README: SLURM profile)
#   snakemake -j 2 --config data='{download: true}'   download datasets in neither cache nor mirror
#   snakemake --report report.html      one HTML report: figures, tables, claims, skipped list, provenance
#   snakemake --report report.html fedepm   the report of a one-paper build
#   snakemake -j 2 --config claim=<paper>/<claim id>   one claim built alone (its cells, at the scale
#                                       that decides it): results/<paper>/claims/<id>.md (fedrepro.papers.alone)
import os

# One BLAS thread per job: parallelism comes from Snakemake jobs (-j), never from BLAS. Kernel threads default
# to 1 too; a sweep job sets its own from its declared threads (config kernel_threads, workflow/scripts/run_cells.py).
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")

# The configuration is read once, strictly, by fedrepro's hook (no `configfile:` directive: Snakemake's
# loader keeps a duplicate key silently): config.yaml, then each --configfile, then --config, which wins
# (fedrepro.experiments.config.workflow_config).
from fedrepro.experiments.yamlio import yaml12_numbers as _yaml12_numbers
from fedrepro.experiments.config import workflow_config as _workflow_config

_settings = getattr(workflow, "config_settings", None)
# the --config values as Snakemake parsed them (another Snakemake API: its whole merge, which then wins)
_command_line = _settings.config if _settings is not None and hasattr(_settings, "config") else dict(config)
_given = _yaml12_numbers(dict(_command_line))     # what --config gave (common.smk's given_scale reads it)
config.clear()
config.update(_workflow_config(workflow.basedir, workflow.configfiles, _given))

report: "workflow/report/workflow.rst"

include: "workflow/rules/common.smk"
include: "workflow/rules/data.smk"
include: "workflow/rules/experiments.smk"
include: "workflow/rules/aggregate.smk"
include: "workflow/rules/figures.smk"
include: "workflow/rules/report.smk"
include: "workflow/rules/claim_alone.smk"


rule all:
    default_target: True
    input:
        all_targets(),
