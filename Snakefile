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

# config.yaml is read by fedrepro's strict reader (a duplicate key or a syntax error names the file,
# line and column); values given with --config / --configfile keep priority, as with `configfile:`.
from fedrepro.experiments.cells import (ConfigError as _ConfigError, deep_merge as _deep_merge, read_yaml as _read_yaml,
                                        yaml12_numbers as _yaml12_numbers)

try:
    _file_config = _read_yaml(os.path.join(workflow.basedir, "config.yaml")) or {}
except _ConfigError as _err:
    raise _ConfigError(f"config.yaml is invalid: {_err}") from None
_given = dict(config)                       # what Snakemake read from --configfile and --config
_settings = getattr(workflow, "config_settings", None)
if _settings is not None and hasattr(_settings, "config"):
    # --configfile read again by the strict reader (duplicate keys, syntax, YAML 1.2 numbers), in
    # order, then --config (its values parsed by Snakemake; YAML 1.2 numbers converted the same way)
    for _path in workflow.configfiles:
        try:
            _file_config = _deep_merge(_file_config, _read_yaml(_path) or {})
        except _ConfigError as _err:
            raise _ConfigError(f"--configfile {_path} is invalid: {_err}") from None
    _given = _yaml12_numbers(dict(_settings.config))
else:                                       # another Snakemake API: check the files, keep its merge
    for _path in workflow.configfiles:
        try:
            _read_yaml(_path)
        except _ConfigError as _err:
            raise _ConfigError(f"--configfile {_path} is invalid: {_err}") from None
    _given = _yaml12_numbers(_given)
config.clear()
config.update(_deep_merge(_file_config, _given))

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
