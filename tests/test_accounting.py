"""fedrepro.sim.accounting: epsilon of the (Poisson-subsampled) Gaussian mechanism against the
documented values of dp-accounting's own tests and of TensorFlow Privacy, equality with the
library's accountants, monotonicity, z = 0, q = 1, and argument validation."""
import math

import dp_accounting
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import PLDAccountant
from dp_accounting.rdp import RdpAccountant

from fedrepro.sim.accounting import METHODS, GaussianAccountant, epsilon_after, round_event


def _library_epsilon(method, event, rounds, delta):
    """What a fresh accountant of the library says after composing ``event`` ``rounds`` times."""
    accountant = RdpAccountant() if method == "rdp" else PLDAccountant()
    accountant.compose(event, rounds)
    return accountant.get_epsilon(delta)


# --- documented values ------------------------------------------------------------------------

# TensorFlow Privacy, tensorflow_privacy/privacy/analysis/compute_dp_sgd_privacy_test.py
# (repository tensorflow/privacy, commit 03035d5), test_compute_dp_sgd_example_privacy: num_epochs
# 1.2, noise_multiplier 0.7, example_delta 1e-5, expected eps to 7 decimals. Per
# compute_dp_sgd_privacy_lib.py (_compute_dp_sgd_example_privacy) the function composes, in a
# default dp_accounting RdpAccountant() / PLDAccountant(), count = ceil(num_epochs) = 2 rounds of
# GaussianDpEvent(z) without subsampling, or count = ceil(num_epochs / q) = 120 rounds of
# PoissonSampledDpEvent(q = 1e-2, GaussianDpEvent(z)); microbatching halves z (0.35).
TF_PRIVACY_EXAMPLE_PRIVACY = [
    # (test case name, z, q, rounds, method, expected epsilon)
    ("no_microbatching_no_subsampling_rdp", 0.7, 1.0, 2, "rdp", 10.8602036),
    ("microbatching_no_subsampling_rdp", 0.35, 1.0, 2, "rdp", 26.2880374),
    ("no_microbatching_with_subsampling_rdp", 0.7, 1e-2, 120, "rdp", 3.2392676),
    ("microbatching_with_subsampling_rdp", 0.35, 1e-2, 120, "rdp", 22.6248601),
    ("no_microbatching_no_subsampling_pld", 0.7, 1.0, 2, "pld", 10.1224946),
    ("microbatching_no_subsampling_pld", 0.35, 1.0, 2, "pld", 24.7160779),
    ("no_microbatching_with_subsampling_pld", 0.7, 1e-2, 120, "pld", 2.4612381),
    ("microbatching_with_subsampling_pld", 0.35, 1e-2, 120, "pld", 18.6977407),
]


@pytest.mark.parametrize("name,z,q,rounds,method,expected", TF_PRIVACY_EXAMPLE_PRIVACY,
                         ids=[c[0] for c in TF_PRIVACY_EXAMPLE_PRIVACY])
def test_tf_privacy_example_privacy_values(name, z, q, rounds, method, expected):
    assert epsilon_after(rounds, z, q, 1e-5, method) == pytest.approx(expected, abs=1e-7)


# dp-accounting 0.6.0's own tests (repository google/differential-privacy, commit 90d1e4a = the
# 0.6.0 release; the same files ship in the wheel): python/dp_accounting/dp_accounting/pld/
# pld_privacy_accountant_test.py, test_gaussian_basic: GaussianDpEvent(sqrt(3)) composed 3 times
# has epsilon 1 at delta 0.126936 (assertAlmostEqual ..., delta=1e-3).
def test_pld_gaussian_basic_value():
    assert epsilon_after(3, math.sqrt(3), 1.0, 0.126936, "pld") == pytest.approx(1, abs=1e-3)


# Same file, test_poisson_subsampled_gaussian: PoissonSampledDpEvent(0.2, GaussianDpEvent(0.5))
# composed 3 times has epsilon 1 at delta 0.15594 (delta=1e-3).
def test_pld_poisson_subsampled_gaussian_value():
    assert epsilon_after(3, 0.5, 0.2, 0.15594, "pld") == pytest.approx(1, abs=1e-3)


# Same repository and commit, python/dp_accounting/dp_accounting/rdp/
# rdp_privacy_accountant_test.py, test_compute_epsilon_delta_gaussian ("noise multiplier is chosen
# to obtain exactly (1,1e-6)-DP"): one Gaussian round with z = 4.530877117 gives epsilon 1 at
# delta 1e-6 (7 decimals, on a grid of orders 1.000, 1.001, ..., 99.999). The accountant uses the
# library's default orders (1.1, 1.2, ..., 10.9, 11, ..., 63, 128, 256, 512, 1024), a coarser grid,
# which gives 1.0000003 here.
def test_rdp_gaussian_exactly_one_epsilon_value():
    assert epsilon_after(1, 4.530877117, 1.0, 1e-6, "rdp") == pytest.approx(1, abs=1e-6)


# TensorFlow Privacy, tutorials/README.md (tensorflow/privacy, commit 03035d5): running
# "compute_dp_sgd_privacy.py --N=60000 --batch_size=256 --noise_multiplier=1.1 --epochs=60
# --delta=1e-5" (the MNIST tutorial's defaults) shows that DP-SGD "satisfies differential privacy
# with eps = 3.01 and delta = 1e-05". That script composes steps = ceil(epochs N / batch_size) =
# 14063 rounds of PoissonSampledDpEvent(256 / 60000, GaussianDpEvent(1.1)). 3.01 is what the older
# conversion from RDP to (epsilon, delta), epsilon = min over orders a of RDP(a) + log(1/delta) /
# (a - 1) (Mironov 2017, Prop. 3), gives for the library's RDP curve of that run (checked below);
# dp-accounting 0.6.0's get_epsilon converts with a tighter bound and gives 2.597.
TUTORIAL = dict(noise_multiplier=1.1, sampling_rate=256 / 60000, delta=1e-5)
TUTORIAL_ROUNDS = math.ceil(60 * 60000 / 256)


def test_tf_privacy_tutorial_value():
    assert TUTORIAL_ROUNDS == 14063
    eps = epsilon_after(TUTORIAL_ROUNDS, **TUTORIAL)
    assert 2.5 < eps <= 3.01
    # the documented 3.01 is the older conversion of the same RDP curve (the library's own)
    library = RdpAccountant()
    library.compose(round_event(1.1, 256 / 60000), TUTORIAL_ROUNDS)
    older = min(r + math.log(1 / 1e-5) / (a - 1) for r, a in zip(library.rdp, library.orders))
    assert round(older, 2) == 3.01
    assert eps == library.get_epsilon(1e-5)


# --- agreement with the library's accountants -------------------------------------------------

@pytest.mark.parametrize("z,q", [(1.0, 0.01), (1.1, 256 / 60000), (0.7, 1.0), (2.0, 0.3)])
def test_rdp_equals_fresh_library_accountant_bit_for_bit(z, q):
    accountant = GaussianAccountant(z, q, 1e-5)
    for rounds in (1, 2, 7, 50, 1000):
        accountant.step(rounds - accountant.rounds)
        assert accountant.epsilon() == _library_epsilon("rdp", round_event(z, q), rounds, 1e-5)


def test_pld_equals_fresh_library_accountant():
    accountant = GaussianAccountant(1.0, 0.05, 1e-6, method="pld")
    accountant.step(40)
    assert accountant.epsilon() == _library_epsilon("pld", round_event(1.0, 0.05), 40, 1e-6)


def test_round_event_is_poisson_sampled_gaussian_below_q_one():
    gaussian = dp_event.GaussianDpEvent(1.3)
    assert round_event(1.3, 0.02) == dp_event.PoissonSampledDpEvent(0.02, gaussian)
    assert round_event(1.3, 1.0) == dp_event.GaussianDpEvent(1.3)
    assert GaussianAccountant(1.3, 0.02, 1e-5).event == round_event(1.3, 0.02)


def test_epsilon_depends_on_rounds_only():
    """Asking after every round, at the end only, or through epsilon_after gives the same number."""
    every = GaussianAccountant(1.0, 0.02, 1e-5)
    for _ in range(30):
        every.step()
        every.epsilon()
    once = GaussianAccountant(1.0, 0.02, 1e-5)
    once.step(30)
    assert every.rounds == once.rounds == 30
    assert every.epsilon() == once.epsilon() == epsilon_after(30, 1.0, 0.02, 1e-5)


# --- behaviour ------------------------------------------------------------------------------------

@pytest.mark.parametrize("method", METHODS)
def test_epsilon_grows_with_rounds(method):
    accountant = GaussianAccountant(1.0, 0.05, 1e-5, method=method)
    assert accountant.epsilon() == 0.0
    previous = 0.0
    for rounds in (1, 10, 100) if method == "pld" else (1, 2, 5, 10, 100, 1000, 5000):
        accountant.step(rounds - accountant.rounds)
        eps = accountant.epsilon()
        assert eps > previous
        previous = eps


@pytest.mark.parametrize("method", METHODS)
def test_epsilon_shrinks_with_noise_multiplier(method):
    zs = (0.8, 1.5, 4.0) if method == "pld" else (0.5, 0.8, 1.0, 1.5, 2.0, 4.0, 10.0)
    eps = [epsilon_after(100, z, 0.05, 1e-5, method) for z in zs]
    assert all(a > b for a, b in zip(eps, eps[1:])), eps


def test_epsilon_shrinks_with_delta_and_sampling_rate():
    assert epsilon_after(100, 1.0, 0.05, 1e-3) < epsilon_after(100, 1.0, 0.05, 1e-5)
    assert epsilon_after(100, 1.0, 0.01, 1e-5) < epsilon_after(100, 1.0, 0.05, 1e-5)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("q", [1.0, 0.3])
def test_zero_noise_is_no_privacy(method, q):
    accountant = GaussianAccountant(0.0, q, 1e-5, method=method)
    assert accountant.epsilon() == 0.0  # no round yet
    accountant.step()
    assert accountant.epsilon() == math.inf
    accountant.step(10)
    assert accountant.epsilon() == math.inf
    assert epsilon_after(5, 0, q, 1e-5, method) == math.inf
    # the library says the same (rdp_privacy_accountant_test.py, test_epsilon_non_private_gaussian)
    assert _library_epsilon(method, round_event(0.0, q), 5, 1e-5) == math.inf


def test_q_one_is_plain_gaussian_composition():
    z, delta = 2.0, 1e-5
    for rounds in (1, 4, 25):
        # T Gaussian rounds with noise multiplier z are one Gaussian with z / sqrt(T)
        single = dp_event.GaussianDpEvent(z / math.sqrt(rounds))
        rdp = epsilon_after(rounds, z, 1.0, delta, "rdp")
        assert rdp == _library_epsilon("rdp", dp_event.GaussianDpEvent(z), rounds, delta)
        assert rdp == pytest.approx(_library_epsilon("rdp", single, 1, delta), rel=1e-12)
        # PLD is tight for it: the library's analytic Gaussian epsilon (Balle & Wang 2018)
        pld = epsilon_after(rounds, z, 1.0, delta, "pld")
        exact = dp_accounting.get_epsilon_gaussian(z / math.sqrt(rounds), delta)
        assert pld == pytest.approx(exact, abs=1e-6)
        assert pld < rdp
    # the library's Poisson-subsampled event with q = 1 gives the same number
    assert epsilon_after(10, z, 1.0, delta) == _library_epsilon(
        "rdp", dp_event.PoissonSampledDpEvent(1.0, dp_event.GaussianDpEvent(z)), 10, delta)


def test_zero_rounds_and_zero_steps():
    assert epsilon_after(0, 1.0, 0.1, 1e-5) == 0.0
    accountant = GaussianAccountant(1.0, 0.1, 1e-5)
    accountant.step(0)
    assert accountant.rounds == 0 and accountant.epsilon() == 0.0
    assert "rounds=0" in repr(accountant)


# --- validation ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,param", [
    (dict(noise_multiplier=-0.1), "noise_multiplier"),
    (dict(noise_multiplier=math.nan), "noise_multiplier"),
    (dict(noise_multiplier=math.inf), "noise_multiplier"),
    (dict(noise_multiplier="1.0x"), "noise_multiplier"),
    (dict(noise_multiplier=None), "noise_multiplier"),
    (dict(sampling_rate=0.0), "sampling_rate"),
    (dict(sampling_rate=-0.5), "sampling_rate"),
    (dict(sampling_rate=1.0001), "sampling_rate"),
    (dict(sampling_rate=math.nan), "sampling_rate"),
    (dict(delta=0.0), "delta"),
    (dict(delta=1.0), "delta"),
    (dict(delta=-1e-5), "delta"),
    (dict(delta=math.nan), "delta"),
    (dict(method="moments"), "method"),
    (dict(method="RDP"), "method"),
])
def test_invalid_parameters_name_the_parameter(kwargs, param):
    args = dict(noise_multiplier=1.0, sampling_rate=0.1, delta=1e-5, method="rdp")
    args.update(kwargs)
    with pytest.raises(ValueError, match=rf"^{param} must be"):
        GaussianAccountant(**args)
    with pytest.raises(ValueError, match=rf"^{param} must be"):
        epsilon_after(3, **args)


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_invalid_counts_name_the_parameter(bad):
    with pytest.raises(ValueError, match=r"^count must be an integer >= 0"):
        GaussianAccountant(1.0, 0.1, 1e-5).step(bad)
    with pytest.raises(ValueError, match=r"^rounds must be an integer >= 0"):
        epsilon_after(bad, 1.0, 0.1, 1e-5)


def test_boundary_values_are_accepted():
    assert GaussianAccountant(0, 1, 0.5).sampling_rate == 1.0
    assert math.isfinite(epsilon_after(1, 1.0, 1e-9, 1e-12))
