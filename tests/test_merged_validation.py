"""An experiment block is validated as every scale and setting makes it, before any job: what the
merged block would run is what is checked, and the message names the key and where it came from."""
import math

import pytest

from fedrepro.core.params import ConfigError
from fedrepro.experiments.expansion import expand
from fedrepro.experiments.config import validate_experiment

BASE = {"problem": {"name": "linreg_synthetic", "m": 8, "n": 5}, "algorithms": {"fedadmm": {}, "fedavg": {"step_c": 0.5}},
        "seeds": 2, "max_rounds": 3, "stop": {"rule": "none"}}


def block(**kw):
    return {**BASE, **kw}


@pytest.mark.parametrize("bad, words", [
    ({"scales": {"quick": {"seeds": 0}}}, ["scale quick", "seeds"]),
    ({"scales": {"quick": {"seeds": 2.5}}}, ["scale quick", "seeds"]),
    ({"scales": {"verify": {"sedes": 3}}}, ["scale verify", "sedes"]),
    ({"scales": {"paper": {"max_rounds": "many"}}}, ["scale paper", "max_rounds"]),
    ({"settings": [{"label": "a", "k00": 3}]}, ["settings[0]", "'a'", "k00"]),
    ({"scales": {"quick": {"settings": [{"label": "b", "seeds": 0}]}}}, ["scale quick", "settings[0]", "seeds"]),
    ({"mechanism": {"epsilon": 1.0}}, ["mechanism", "name"]),
    ({"mechanism": {"nme": "laplace_epm", "epsilon": 1.0}}, ["mechanism", "name"]),
    ({"attack": {"c": 1.0}}, ["attack", "name"]),
])
def test_merged_blocks_are_validated(bad, words):
    with pytest.raises(ConfigError) as err:
        validate_experiment(block(**bad), "experiment p/e")
    for w in words:
        assert w in str(err.value), (w, str(err.value))


def test_valid_scales_and_settings_pass():
    validate_experiment(block(scales={"quick": {"seeds": 1}, "verify": {"seeds": [0, 1, 2]}},
                              settings=[{"label": "a", "k0": 3}]), "experiment p/e")
    validate_experiment(block(mechanism=None, attack=None), "experiment p/e")


def test_an_empty_sweep_list_is_an_error_not_a_dropped_algorithm():
    with pytest.raises(ConfigError, match=r"algorithms\.fedavg\.step_c is an empty list"):
        expand("p", "e", block(algorithms={"fedadmm": {}, "fedavg": {"step_c": []}}))


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, ".inf"])
def test_non_finite_parameters_are_rejected(value):
    with pytest.raises((ConfigError, ValueError), match="step_c"):
        expand("p", "e", block(algorithms={"fedavg": {"step_c": value}}))


def test_parameters_that_take_inf_declare_it():
    from fedrepro.algorithms import make_algorithm

    assert math.isinf(make_algorithm("afl").alpha1)            # the default: no box projection
    assert make_algorithm("afl", alpha1=10.0).alpha1 == 10.0


def test_stop_by_algorithm_for_an_absent_algorithm_is_an_error():
    with pytest.raises(ConfigError, match=r"stop_by_algorithm names \['fedprox'\]"):
        expand("p", "e", block(stop_by_algorithm={"fedprox": {"rule": "none"}}))


def test_paper_overrides_for_an_unknown_paper_is_an_error():
    from fedrepro.experiments.expansion import load_experiments

    with pytest.raises(ConfigError, match=r"paper_overrides: \['fedepn'\]"):
        load_experiments({"papers": ["fedepm"], "paper_overrides": {"fedepn": {"fig3": {"seeds": 1}}}})
