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

from fedrepro.experiments.cells import SCALES, ConfigError, expand
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
