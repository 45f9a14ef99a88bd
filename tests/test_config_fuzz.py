"""Property-based fuzz of experiment blocks, generated from the schema's declared constraints (not a
hand list): every property of an experiment gets values its declaration rejects (wrong type, out of
range, not an option, empty where a minimum is declared), placed in the block, in a scale or in a
setting, plus unknown keys at each place; each malformed block is rejected by
``validate_experiment`` — what the workflow runs at parse time, before any job — with a message
naming the key. The default suite runs a bounded number of examples; ``-m slow`` many more."""
from __future__ import annotations

import copy

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import SCALES, expand
from fedrepro.experiments.config import load_schema, validate_experiment

VALID = {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5},
         "algorithms": {"fedadmm": {}, "fedavg": {"step_c": 0.5}},
         "seeds": 2, "max_rounds": 3, "k0": 2, "rho": 0.5, "stop": {"rule": "none"},
         "settings": [{"label": "a", "k0": 3}],
         "scales": {"quick": {"seeds": 1}, "verify": {"seeds": 3}}}
PROPS = load_schema()["$defs"]["experiment"]["properties"]
NOT_IN_SETTINGS = {"settings", "scales"}


def _types(prop) -> set:
    t = prop.get("type", [])
    return set([t] if isinstance(t, str) else t)


def bad_values(prop: dict) -> list:
    """Values the property's declaration rejects, read off the declaration."""
    out = []
    for alt in prop.get("oneOf", []):          # rejected by every alternative: below all minimums, wrong type
        out += [v for v in bad_values(alt) if not isinstance(v, (list, dict))]
    types = _types(prop)
    if "enum" in prop:
        out.append("not_one_of_the_options")
    if types and not types & {"string"}:
        out.append("some text")
    if types and not types & {"number", "integer", "string", "null"}:
        out.append(3)
    if types and types <= {"integer", "null"}:
        out.append(2.5)
    for key, shift in (("minimum", -1), ("exclusiveMinimum", 0), ("maximum", 1), ("exclusiveMaximum", 0)):
        if key in prop and isinstance(prop[key], (int, float)):
            out.append(prop[key] + shift)
    if prop.get("minItems"):
        out.append([])
    if prop.get("minProperties"):
        out.append({})
    if prop.get("required") or "$ref" in prop:
        out.append({"no_name": 1})
    if prop.get("oneOf"):
        out.append([])
    if prop.get("uniqueItems"):
        out.append([1, 1])
    return out


def _rejects(prop: dict, value) -> bool:
    """The declaration itself rejects ``value`` (candidates of a oneOf are kept only if every
    alternative rejects them)."""
    import jsonschema

    schema = load_schema()
    sub = {**prop, "$schema": schema["$schema"], "$defs": schema["$defs"]}
    return not jsonschema.validators.validator_for(sub)(sub).is_valid(value)


MUTATIONS = sorted({(key, repr(v)): (key, v) for key, prop in PROPS.items() for v in bad_values(prop)
                    if _rejects(prop, v)}.items())
MUTATIONS = [kv for _, kv in MUTATIONS]
PLACES = ("block", "scales.quick", "scales.verify", "settings[0]")


def place(block: dict, where: str, key: str, value) -> dict:
    out = copy.deepcopy(block)
    if where == "block":
        out[key] = value
    elif where.startswith("scales."):
        out["scales"][where.split(".")[1]][key] = value
    else:
        out["settings"][0][key] = value
    return out


def at_parse_time(block: dict) -> None:
    """What the workflow does with an experiment block when it parses (workflow/rules/common.smk),
    before any job: validate it as written and merged, then expand it into checked cells at every scale."""
    validate_experiment(block, "experiment p/e")
    for scale in SCALES:
        expand("p", "e", block, scale)


def test_the_mutations_cover_every_constrained_property():
    constrained = {k for k, p in PROPS.items() if bad_values(p)}
    assert {k for k, _ in MUTATIONS} == constrained
    for key in ("seeds", "k0", "rho", "max_rounds", "eval_every", "grid", "algorithms", "mechanism", "attack",
                "timing_repeats", "store", "stop", "problem"):
        assert key in constrained, key
    validate_experiment(VALID, "experiment p/e")          # the base block itself is valid
    assert expand("p", "e", VALID, "verify")


def _check(mutation, where):
    key, value = mutation
    if where != "block" and (key in NOT_IN_SETTINGS | {"description"} or isinstance(value, dict)):
        return      # not a key a scale or setting may carry; a mapping there is deep-merged, not a replacement
    with pytest.raises((ConfigError, ValueError)) as err:
        at_parse_time(place(VALID, where, key, value))
    named = [key, *(value if isinstance(value, dict) else [])]      # the key, or the bad key inside it
    assert any(n in str(err.value) for n in named), (key, value, where, str(err.value))


def _check_unknown(name, where):
    if name in PROPS or name == "label":
        return
    with pytest.raises((ConfigError, ValueError)) as err:
        at_parse_time(place(VALID, where, name, 1))
    assert name in str(err.value)


KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=2, max_size=12)
FUZZ = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(max_examples=80, **FUZZ)
@given(st.sampled_from(MUTATIONS), st.sampled_from(PLACES))
def test_malformed_values_are_rejected_naming_the_key(mutation, where):
    _check(mutation, where)


@settings(max_examples=40, **FUZZ)
@given(KEYS, st.sampled_from(PLACES))
def test_unknown_keys_are_rejected_at_every_level(name, where):
    _check_unknown(name, where)


@pytest.mark.slow
@settings(max_examples=2000, **FUZZ)
@given(st.sampled_from(MUTATIONS), st.sampled_from(PLACES), KEYS)
def test_fuzz_many_examples(mutation, where, name):
    _check(mutation, where)
    _check_unknown(name, where)


# ------------------------------------------------------------------ issue #44: values checked against each other
LINREG = {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5}, "algorithms": {"fedavg": {"step_c": 0.5}},
          "max_rounds": 2, "k0": 1, "rho": 1.0, "stop": {"rule": "none"}}


@settings(max_examples=40, **FUZZ)
@given(st.integers(1, 12), st.one_of(st.none(), st.integers(0, 16)),
       st.one_of(st.none(), st.lists(st.integers(-3, 16), min_size=1, max_size=4)),
       st.sampled_from(["block", "grid"]))
def test_attacks_against_the_worker_count(m, B, faulty, where):
    """An attack's faulty workers (``faulty`` ids or the last ``B``, default 4) must be workers of the
    problem, however m is given (the block or a grid): accepted exactly when they are, else refused
    before any job naming the attack key and the worker count."""
    attack = {"name": "gaussian", **({} if B is None else {"B": B}), **({} if faulty is None else {"faulty": faulty})}
    block = {**LINREG, "attack": attack}
    if where == "grid":
        block["grid"] = {"problem.m": sorted({8, m})}
    else:
        block["problem"] = {**LINREG["problem"], "m": m}
    low = min(m, 8) if where == "grid" else m          # every grid point must hold the faulty workers
    valid = all(0 <= i < low for i in faulty) if faulty is not None else (4 if B is None else B) <= low
    if valid:
        at_parse_time(block)
        return
    with pytest.raises(ConfigError) as err:
        at_parse_time(block)
    msg = str(err.value)
    assert "attack.faulty" in msg if faulty is not None else "attack.B" in msg, msg
    assert any(f"problem.m = {n}" in msg for n in ([m, 8] if where == "grid" else [m])), msg


METRIC_NAMES = ["objective", "grad_norm2", "accuracy", "test_accuracy", "train_accuracy", "bogus_metric", "loss_w"]


@settings(max_examples=30, **FUZZ)
@given(st.lists(st.sampled_from(METRIC_NAMES), min_size=1, max_size=3, unique=True),
       st.sampled_from(["metrics", "plot.metrics", "scales.quick.metrics", "settings[0].metrics"]))
def test_metrics_are_names_the_problem_evaluates(names, where):
    """``metrics`` (what a run evaluates) and ``plot.metrics`` (what a custom figure draws), wherever
    written, name only what the problem records: else refused naming the unknown metric."""
    from fedrepro.problems.glm import LinearModelProblem

    block = copy.deepcopy({**LINREG, "scales": {"quick": {}}, "settings": [{"label": "a"}]})
    if where == "metrics":
        block["metrics"] = names
    elif where == "plot.metrics":
        block["plot"] = {"metrics": names}
    elif where.startswith("scales"):
        block["scales"]["quick"]["metrics"] = names
    else:
        block["settings"][0]["metrics"] = names
    unknown = [n for n in names if n not in LinearModelProblem.METRIC_CATALOGUE]
    if not unknown:
        at_parse_time(block)
        return
    with pytest.raises(ConfigError) as err:
        at_parse_time(block)
    assert unknown[0] in str(err.value) and "metrics" in str(err.value)


@settings(max_examples=12, **FUZZ)
@given(st.sampled_from(["fig3", "fig4", "no_such_figure"]),
       st.sampled_from([("seeds", 1), ("seeds", 2), ("seeds", 0), ("seedz", 1), ("max_rounds", -1), ("k0", 3)]),
       st.booleans())
def test_paper_overrides_apply_or_are_refused(exp, kv, enabled):
    """An override of a paper's experiment either holds at the build's scale (a top-level key wins over
    the paper's scale block) or is refused naming it, whether or not the paper is built."""
    from pathlib import Path

    from fedrepro.experiments.expansion import all_cells, load_experiments
    from fedrepro.experiments.config import validate_config

    root = Path(__file__).resolve().parents[1]
    key, value = kv
    config = {"scale": "quick", "papers": ["fedepm"] if enabled else [],
              "paper_overrides": {"fedepm": {exp: {key: value}}}}

    def parse():
        validate_config(config)
        for paper, exps in load_experiments(config, root).items():
            for exp_id, block in exps.items():
                validate_experiment(block, f"experiment {paper}/{exp_id}")
        return all_cells(config, root)

    from fedrepro.experiments.yamlio import load_paper_fragment

    block = (load_paper_fragment("fedepm", root).get("experiments") or {}).get(exp) or {}
    grids = [block.get("grid") or {}, *(((b or {}).get("grid") or {}) for b in (block.get("scales") or {}).values())]
    swept = any(key in g for g in grids)            # a grid would override it: override the grid instead
    bad = exp == "no_such_figure" or key == "seedz" or value in (0, -1) or swept
    if bad:
        with pytest.raises(ConfigError) as err:
            parse()
        assert (exp if exp == "no_such_figure" else key) in str(err.value)
        if swept and exp != "no_such_figure" and key != "seedz":
            assert "grid" in str(err.value)
        return
    cells = parse()
    if enabled:
        got = cells[("fedepm", exp)]
        if key == "seeds":
            assert {c["instance"] for c in got} == set(range(value))
        else:
            assert {c[key] for c in got} == {value}
