"""config.yaml: load, fill defaults and validate with messages that name the key,
the value and what is allowed."""
from __future__ import annotations

import functools
from pathlib import Path

import yaml

from fedrepro.core.params import ConfigError
from fedrepro.experiments.yamlio import PAPERS, deep_merge, read_yaml, yaml12_numbers

# Package data (pyproject: package-data); workflow/schemas/config.schema.yaml is a link to it.
SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "config.schema.yaml"


def load_schema() -> dict:
    with open(SCHEMA) as fh:
        return yaml.safe_load(fh)


def _validator(schema: dict):
    """A validator of the schema's own dialect (``$schema``: draft 2020-12, the one
    ``snakemake.utils.validate`` uses)."""
    import jsonschema

    return jsonschema.validators.validator_for(schema)(schema)


def _explain(error) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "(top level)"
    value = error.instance
    validator = error.validator
    if validator == "enum":
        allowed = ", ".join(map(str, error.validator_value))
        return f"key '{where}' has value {value!r}; allowed values: {allowed}"
    if validator == "additionalProperties":
        known = sorted((error.schema.get("properties") or {}).keys())
        extra = sorted(set(value) - set(known)) if isinstance(value, dict) else []
        return (f"key '{where}' has unknown entr{'y' if len(extra) == 1 else 'ies'} {extra}; "
                f"allowed keys: {', '.join(known) if known else '(free-form names)'}")
    if validator == "required":
        return f"key '{where}' is missing {error.message.split(' is a')[0]}"
    if validator == "type":
        return f"key '{where}' has value {value!r} of the wrong type; expected {error.validator_value}"
    if validator in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return f"key '{where}' has value {value!r}; it must satisfy {validator} {error.validator_value}"
    if validator == "pattern" or validator == "propertyNames":
        return f"key '{where}': {error.message}; names must start with a letter and use letters, digits, _"
    if validator == "oneOf" and error.context:
        reasons = sorted({c.message for c in error.context})
        return f"key '{where}' has value {value!r}, which is none of the allowed forms: " + "; or ".join(reasons)
    return f"key '{where}' has value {value!r}: {error.message}"


#: the scales a build runs at (``scale:``); an experiment block's ``scales.<s>`` adjusts it at ``s``
SCALES = ("quick", "verify", "reduced", "paper")


def resolve_scale(block: dict, scale: str) -> dict:
    """Apply ``block['scales'][scale]`` and drop the ``scales`` key. ``verify`` (the cheapest
    configuration that decides the paper's statements) and ``reduced`` (an intermediate tier, e.g.
    fedadmm_gong's MLPs on full data) fall back to the block's ``quick`` settings when the block does
    not define them."""
    scales = block.get("scales", {}) or {}
    if scale not in SCALES and scale not in scales:
        raise ConfigError(f"scale={scale!r} is not allowed; use {', '.join(SCALES)} "
                          f"(or a scale this experiment defines: {sorted(scales)})")
    out = {k: v for k, v in block.items() if k != "scales"}
    if scale in ("verify", "reduced") and scale not in scales:
        scale = "quick"
    return deep_merge(out, scales.get(scale, {}))



BOOLEAN_KEYS = ("strict",)
NESTED_BOOLEAN_KEYS = (("data", "download"),)


def coerce_command_line(config: dict) -> dict:
    """``snakemake --config strict=true`` passes the string 'true': make it a boolean."""
    for key in BOOLEAN_KEYS:
        value = config.get(key)
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
            config[key] = value.strip().lower() in ("true", "yes", "1")
    for outer, key in NESTED_BOOLEAN_KEYS:
        block = config.get(outer)
        value = block.get(key) if isinstance(block, dict) else None
        if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "1", "0"):
            block[key] = value.strip().lower() in ("true", "yes", "1")
    return config


def _paper_errors(config: dict) -> list[str]:
    """The paper keys are the folders of ``fedrepro/papers/`` (:data:`fedrepro.experiments.yamlio.PAPERS`; not in the schema)."""
    papers = config.get("papers")
    if not isinstance(papers, list):
        return []
    return [f"key 'papers.{i}' has value {p!r}; allowed values: {', '.join(PAPERS)}"
            for i, p in enumerate(papers) if p not in PAPERS]


def validate_config(config: dict, source: str = "config.yaml") -> dict:
    """Validate ``config`` against the schema; raise :class:`ConfigError` naming every problem."""
    coerce_command_line(config)
    validator = _validator(load_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: list(map(str, e.absolute_path)))
    problems = [_explain(e) for e in errors] + _paper_errors(config)
    if problems:
        lines = "\n  - ".join(problems)
        raise ConfigError(f"{source} is invalid:\n  - {lines}\nFix the key(s) above and run again.")
    return config


@functools.lru_cache(maxsize=1)
def _experiment_validator():
    schema = load_schema()
    sub = {**schema["$defs"]["experiment"], "$schema": schema["$schema"], "$defs": schema["$defs"]}
    return _validator(sub)


def _experiment_errors(block: dict, where: str) -> None:
    errors = list(_experiment_validator().iter_errors(block))
    if errors:
        lines = "\n  - ".join(_explain(e) for e in errors)
        raise ConfigError(f"{where} is invalid:\n  - {lines}")


def validate_experiment(block: dict, where: str) -> None:
    """Validate one experiment block (paper fragments use the same schema as user sweeps): the
    block as written, then the block each of its scales gives (``scales.<s>`` merged in) and each
    ``settings`` entry merged into that, so a key that is wrong only after merging (``seeds: 0`` in
    ``scales.quick``, an unknown key in a setting) is named before any job runs."""
    _experiment_errors(block, where)
    scales = block.get("scales") or {}
    for scale in [None, *scales]:
        resolved = block if scale is None else resolve_scale(block, scale)
        at = where if scale is None else f"{where} at scale {scale} (scales.{scale} merged in)"
        if scale is not None:
            _experiment_errors(resolved, at)
        base = {k: v for k, v in resolved.items() if k not in ("settings", "scales")}
        for i, setting in enumerate(resolved.get("settings") or []):
            if isinstance(setting, dict):
                over = {k: v for k, v in setting.items() if k != "label"}
                _experiment_errors(deep_merge(base, over), f"{at}, settings[{i}] (label {setting.get('label')!r})")
    check_plot_metrics(block, where)


def check_plot_metrics(block: dict, where: str) -> None:
    """``plot.metrics`` of a custom experiment must name what its runs record: a metric its problem
    class can evaluate, a column one of its algorithms records (``Algorithm.RECORDS``) or a column
    every run has (``results.ROUND_COLUMNS``, ``RUN_COLUMNS``); anything else is a ConfigError
    (a misspelt metric was once drawn as the objective)."""
    from fedrepro.algorithms import algorithm_class
    from fedrepro.experiments.results import ROUND_COLUMNS, RUN_COLUMNS
    from fedrepro.problems import problem_class
    from fedrepro.problems.base import FederatedProblem, unknown_names

    wanted = ((block.get("plot") or {}).get("metrics")) or []
    if not wanted:
        return
    try:                    # an unknown problem or algorithm is named by the cell checks
        problem = problem_class((block.get("problem") or {}).get("name"))
        algorithms = [algorithm_class(name) for name in (block.get("algorithms") or {})]
    except ValueError:
        return
    if problem is None:
        return
    records = sorted({r for cls in algorithms for r in getattr(cls, "RECORDS", ())})
    mechanisms = {(block.get("mechanism") or {}).get("name"), *((block.get("grid") or {}).get("mechanism.name") or [])}
    from fedrepro.sim.privacy import MECHANISM_RECORDS
    records += sorted({r for name in mechanisms if name in MECHANISM_RECORDS for r in MECHANISM_RECORDS[name]})
    base_metrics = set(FederatedProblem.METRIC_CATALOGUE)       # in ROUND_COLUMNS; not every problem has them
    catalogue = [*problem.METRIC_CATALOGUE, *records, *(c for c in ROUND_COLUMNS if c not in base_metrics),
                 *RUN_COLUMNS]
    unknown = unknown_names(catalogue, wanted)
    if unknown:
        raise ConfigError(f"{where}: plot.metrics names {unknown}, which its runs do not record; "
                          f"allowed: {sorted(set(catalogue))} (<j>: a worker index)")


def load_config(path: str | Path = "config.yaml", overrides: dict | None = None) -> dict:
    """Read, merge ``overrides`` (like ``snakemake --config``) and validate."""
    config = deep_merge(read_yaml(path) or {}, overrides or {})
    return validate_config(config, str(path))


def workflow_config(basedir: str | Path, configfiles, command_line: dict | None) -> dict:
    """The build's configuration, read once and strictly: the hook the Snakefile calls instead of a
    ``configfile:`` directive.

    Snakemake's own loader is not strict (a duplicate key keeps the last value silently; ``1e3`` is a
    string under YAML 1.1). So the workflow has no ``configfile:``; ``config.yaml`` (in ``basedir``) and
    every ``--configfile`` are read here, in order, by :func:`fedrepro.experiments.yamlio.read_yaml` (a
    duplicate key or a syntax error names the file, line and column; YAML 1.2 numbers), each merged over
    the one before; then the ``--config`` values (``command_line``: Snakemake's parse of them, its
    ``workflow.config_settings.config``, numbers converted by the same YAML 1.2 rule) win, as they do
    with ``configfile:``. (A Snakemake API without ``config_settings`` passes its whole merge as
    ``command_line``: the files are still checked here, and its values win.)
    Validation against the schema follows (:func:`validate_config`, in ``workflow/rules/common.smk``)."""
    try:
        config = read_yaml(Path(basedir) / "config.yaml") or {}
    except ConfigError as err:
        raise ConfigError(f"config.yaml is invalid: {err}") from None
    for path in configfiles:
        try:
            config = deep_merge(config, read_yaml(path) or {})
        except ConfigError as err:
            raise ConfigError(f"--configfile {path} is invalid: {err}") from None
    return deep_merge(config, yaml12_numbers(dict(command_line or {})))

