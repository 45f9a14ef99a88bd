"""Privacy mechanisms: the first stage of the client-to-server channel (:mod:`fedrepro.sim.channel`).

``MECHANISMS[name](spec)`` builds one from the ``mechanism`` block of an experiment (``spec['name']``
selects it). Two kinds, by ``acts_on``:

* ``"upload"`` -- a callable ``(uploads, clients, r, state, ctx) -> uploads`` on the uploaded models
  (``laplace_epm`` below; the channel hands an algorithm whose upload is not a model, e.g. FedADMM's
  z_i, as the model w + d_i it stands for, and maps the result back);
* ``"update"`` -- :class:`GaussianDP` (``gaussian``; ``clip`` is it with no noise): clipping of each
  client's model update, then the noised unweighted mean released by the server, with the privacy
  spent after each round from ``dp-accounting`` (:mod:`fedrepro.sim.accounting`).

Each declares ``refusal(algorithm)``: why it cannot act on an algorithm (the config check's reason).

``laplace_epm`` -- FedEPM (Zhou & Li) upload noise, paper eq. (39) in the
authors' code form (spec 001 Sec. 3.0, 7-A6). For client i uploading at the end
of round r (global iteration k with k + 1 = (r + 1) k0):

    mu_i  = mu0 (1 + c ||gap_i||^2) alpha^(k+1)          gap_i = w_i^k - w^(s)
    nu_i  = 2 ||g_i||_1 / (epsilon mu_i)                  g_i = grad f_i(w^(s))
    eps_i = nu_i * xi_i,   z_i = w_i^{k+1} + eps_i

with xi_i = ``stdlap(n)`` (``generator="code"``: the code's ``randl``, a Laplace
vector standardised to sample mean 0 and sample std 1, so ||eps_i|| =
nu_i sqrt(n-1) exactly) or a plain Laplace(0, 1) vector (``generator="laplace"``:
eps_i ~ Laplace(0, nu_i) per entry, the density the DP proof (49) uses). A run that
replays another implementation's noise (:mod:`fedrepro.sim.replay`) supplies the xi_i instead:
one replayed row per uploading client, in the order the round's clients were selected (the rows of
the uploads: ascending ids under the default sampler, a replayed selection file's own order).

The algorithm reports what the formula needs in ``state.upload_info`` from its
``upload()``: ``grad_l1`` (len(clients),), ``gap_norm2`` (len(clients),) and
optionally ``iteration`` (the exponent k + 1; default (r + 1) k0) and ``m``.
For an algorithm that does not (e.g. FedADMM, FedAvg), the mechanism computes
them itself from the problem it was prepared with (``prepare(problem, ctx)``,
called by the loop): ``grad_l1`` = ||grad f_i(state.w)||_1 at the broadcast model
and ``gap_norm2`` = ||upload_i - state.w||^2 (the model after the local phase:
the only client model the mechanism sees; the term is weighted by c = 1e-8).
The mechanism records ``snr`` (min over this round's uploaders of
log10(||w_i|| / ||eps_i||), spec default ``snr_over: last_round``) and
``snr_code`` (the code's min over all m clients of each client's latest value,
0 for a client that never uploaded) in ``state.metrics``; the loop records them
at the next evaluation, i.e. for the last completed round.
"""
from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from fedrepro.core.noise import GENERATORS, draw_noise, stdlap  # noqa: F401  (re-exported)
from fedrepro.core.params import NONNEGATIVE, POSITIVE, Interval, Options, Real, validate_params

__all__ = ["stdlap", "LaplaceEPM", "GaussianDP", "MECHANISMS", "build_mechanism"]

def _extra_refusal(algorithm) -> str | None:
    """A client that also sends something besides its declared upload (``upload_extra``) would send it in
    the clear: the mechanism protects the upload only, so its guarantee would not hold for the message."""
    extra = getattr(algorithm, "upload_extra", None)
    if extra:
        return (f"each client also sends {extra}, which the mechanism neither clips nor noises, so its privacy "
                "guarantee would not hold for what the client sends")
    return None


@dataclass
class LaplaceEPM:
    """FedEPM eq. (39) Laplace upload noise (see the module docstring).

    Parameters
    ----------
    epsilon : privacy parameter (the code's ``noise``), > 0.
    generator : ``"code"`` (standardised Laplace, default) or ``"laplace"``.
    mu0, c, alpha : the constants of eq. (39) (paper/code: 0.05, 1e-8, 1.001).
    """

    epsilon: float = 0.1
    generator: str = "code"
    mu0: float = 0.05
    c: float = 1e-8
    alpha: float = 1.001
    name = "laplace_epm"
    acts_on = "upload"          # noise on the uploaded model (the channel hands a non-model upload as w + d_i)

    def refusal(self, algorithm) -> str | None:
        """Why the mechanism cannot act on what ``algorithm`` uploads, or None."""
        kind = getattr(algorithm, "upload_kind", None)
        if kind is None:
            return "the algorithm's uploads are undeclared (no upload kind), so there is no model to add the noise to"
        return _extra_refusal(algorithm)

    def prepare(self, problem, ctx) -> None:
        """Start a run: remember the problem (for algorithms that do not fill ``state.upload_info``)
        and reset the per-client SNR record."""
        self._problem = problem
        self._snr_clients = None

    def _fill_missing(self, info: dict, uploads: np.ndarray, clients: np.ndarray, state) -> dict:
        problem = getattr(self, "_problem", None)
        if problem is None:
            return info
        info = dict(info)
        w = np.asarray(state.w, dtype=float)
        if "grad_l1" not in info:
            info["grad_l1"] = np.abs(problem.client_grads(w, clients)).sum(axis=1)
        if "gap_norm2" not in info:
            D = uploads - w[None, :]
            info["gap_norm2"] = np.einsum("ij,ij->i", D, D)
        info.setdefault("m", problem.m)
        return info

    constraints = {"epsilon": [POSITIVE], "generator": [Options(*GENERATORS)], "mu0": [POSITIVE],
                   "c": [NONNEGATIVE], "alpha": [POSITIVE]}

    def __post_init__(self):
        validate_params(self.name, {f.name: getattr(self, f.name) for f in fields(self)}, self.constraints)
        self.epsilon = float(self.epsilon)

    def scales(self, info: dict, n_clients: int, r: int, k0: int, who: str = "the algorithm") -> np.ndarray:
        """Laplace scale nu_i of every uploading client, shape (n_clients,)."""
        missing = [k for k in ("grad_l1", "gap_norm2") if k not in info]
        if missing:
            raise ValueError(
                f"laplace_epm needs state.upload_info[{', '.join(map(repr, missing))}] from {who}'s upload(): "
                "'grad_l1' = ||grad f_i(w)||_1 at the broadcast model w and 'gap_norm2' = "
                "||w_i^k - w||^2 (client model before its last local step), one value per uploading client; "
                "or call prepare(problem, ctx) first so that the mechanism can compute them")
        g1 = np.asarray(info["grad_l1"], dtype=float)
        gap2 = np.asarray(info["gap_norm2"], dtype=float)
        if g1.shape != (n_clients,) or gap2.shape != (n_clients,):
            raise ValueError(f"laplace_epm: upload_info 'grad_l1'/'gap_norm2' must have shape ({n_clients},), "
                             f"got {g1.shape} and {gap2.shape}")
        it = int(info.get("iteration", (r + 1) * k0))           # k + 1 at the upload
        mu = self.mu0 * (1.0 + self.c * gap2) * self.alpha ** it
        return 2.0 * g1 / (self.epsilon * mu)

    def __call__(self, uploads: np.ndarray, clients: np.ndarray, r: int, state, ctx) -> np.ndarray:
        """uploads : (len(clients), n) -> uploads + eps, eps_i = nu_i * xi_i."""
        uploads = np.asarray(uploads, dtype=float)
        info = state.upload_info
        if "grad_l1" not in info or "gap_norm2" not in info:
            info = self._fill_missing(info, uploads, np.asarray(clients), state)
        nu = self.scales(info, len(clients), r, ctx.k0, who=ctx.algorithm or "the algorithm")
        xi = ctx.unit_noise(lambda rng, shape: draw_noise(rng, shape, self.generator), uploads.shape, "noise", r)
        noise = nu[:, None] * xi
        with np.errstate(divide="ignore"):
            snr = np.log10(np.linalg.norm(uploads, axis=1) / np.linalg.norm(noise, axis=1))
        state.metrics["snr"] = float(snr.min()) if snr.size else float("nan")
        m = info.get("m")
        if m is not None:
            latest = getattr(self, "_snr_clients", None)
            if latest is None or len(latest) != int(m):
                latest = self._snr_clients = np.zeros(int(m))   # code: snr initialised to 0
            latest[np.asarray(clients)] = snr
            state.metrics["snr_code"] = float(latest.min())
        return uploads + noise


@dataclass
class GaussianDP:
    """Client-level differential privacy of DP-FedAvg (McMahan, Ramage, Talwar & Zhang, ICLR 2018).

    Each client of the round clips its model update to L2 norm ``clip`` (C): d_i <- d_i min(1, C/||d_i||);
    the server releases the unweighted mean of the n clipped updates with Gaussian noise,

        d = (sum_i d_i + z C xi) / n,        xi ~ N(0, I_d)   (stream ``dp_noise``, keyed by round)

    (the Gaussian mechanism on the sum, whose L2 sensitivity to one client is C), and the algorithm
    receives d as the update of every client of the round (its own average of equal rows is d). The
    privacy loss after each round is that of the composed subsampled Gaussian mechanism with noise
    multiplier z and sampling rate q = n / m, for the stated ``delta``, from the maintained accountant
    of ``dp-accounting`` (:mod:`fedrepro.sim.accounting`; RDP by default, PLD on request): trace
    column ``dp_epsilon``. The accountant treats the round's fixed-size uniform sample as Poisson
    sampling at rate q, the usual approximation (stated, not hidden).

    Parameters
    ----------
    clip : C > 0. noise_multiplier : z >= 0 (0: clipping only, epsilon = inf). epsilon : instead of z,
    the target epsilon after ``max_rounds`` rounds; z is calibrated by the library
    (``dp_accounting.calibrate_dp_mechanism``) before the run. delta : in (0, 1) (default 1e-5).
    accountant : ``rdp`` | ``pld``.
    """

    clip: float = 1.0
    noise_multiplier: float | None = None
    epsilon: float | None = None
    delta: float = 1e-5
    accountant: str = "rdp"
    name = "gaussian"
    acts_on = "update"
    constraints = {"clip": [POSITIVE], "noise_multiplier": [None, NONNEGATIVE], "epsilon": [None, POSITIVE],
                   "delta": [Interval(Real, 0, 1, "neither")], "accountant": [Options("rdp", "pld")]}

    def __post_init__(self):
        validate_params(self.name, {f.name: getattr(self, f.name) for f in fields(self)}, self.constraints)
        if (self.noise_multiplier is None) == (self.epsilon is None):
            raise ValueError(f"mechanism {self.name!r}: give exactly one of noise_multiplier (z >= 0) and epsilon "
                             "(the target after max_rounds rounds)")

    def refusal(self, algorithm) -> str | None:
        kind = getattr(algorithm, "upload_kind", None)
        if kind is None:
            return "the algorithm's uploads are undeclared (no upload kind), so there is no model update to clip"
        if getattr(algorithm, "server_rule", "own") != "mean":
            return ("the algorithm's server does not average the uploads (its own rule), so the noised mean "
                    "cannot stand in for its server step")
        return _extra_refusal(algorithm)

    def prepare(self, problem, ctx) -> None:
        self._m = int(problem.m)
        n = len(ctx.clients(0))
        self.sampling_rate = min(n / self._m, 1.0)
        if self.epsilon is not None:
            from fedrepro.sim.accounting import calibrate_noise_multiplier
            self.z = calibrate_noise_multiplier(self.epsilon, rounds=ctx.max_rounds, sampling_rate=self.sampling_rate,
                                                delta=self.delta, method=self.accountant)
        else:
            self.z = float(self.noise_multiplier)
        self._accountant = None
        if self.z > 0:
            from fedrepro.sim.accounting import GaussianAccountant
            self._accountant = GaussianAccountant(self.z, self.sampling_rate, self.delta, method=self.accountant)

    def clip_rows(self, D: np.ndarray, state) -> np.ndarray:
        norms = np.sqrt(np.einsum("ij,ij->i", D, D))
        factor = np.minimum(1.0, self.clip / np.maximum(norms, np.finfo(float).tiny))
        state.metrics["clip_fraction"] = float(np.mean(norms > self.clip)) if norms.size else 0.0
        D *= factor[:, None]                 # in place: D is the channel's own array (a (|S|, d) copy is costly)
        return D

    def release(self, D: np.ndarray, r: int, state, ctx) -> np.ndarray:
        """The noised unweighted mean of the clipped rows, (d,)."""
        total = D.sum(axis=0)
        if self.z > 0:
            total = total + (self.z * self.clip) * ctx.rng("dp_noise", r).standard_normal(D.shape[1])
            self._accountant.step()
            state.metrics["dp_epsilon"] = float(self._accountant.epsilon())
        state.metrics["dp_noise_multiplier"] = float(self.z)
        return total / D.shape[0]


def _build_gaussian(spec: dict) -> GaussianDP:
    params = {k: v for k, v in (spec or {}).items() if k != "name"}
    validate_params("mechanism gaussian", params, GaussianDP.constraints)
    return GaussianDP(**params)


def _build_clip(spec: dict) -> GaussianDP:
    params = {k: v for k, v in (spec or {}).items() if k != "name"}
    validate_params("mechanism clip", params, _build_clip.constraints)
    return GaussianDP(clip=params.get("clip", 1.0), noise_multiplier=0.0)


_build_clip.constraints = {"clip": [POSITIVE]}      # the keys a clip block accepts (read by the reference)


def _build_laplace_epm(spec: dict) -> LaplaceEPM:
    params = {k: v for k, v in (spec or {}).items() if k != "name"}
    validate_params("mechanism laplace_epm", params, LaplaceEPM.constraints)
    return LaplaceEPM(**params)


MECHANISMS = {
    "laplace_epm": _build_laplace_epm,
    "gaussian": _build_gaussian,        # DP-FedAvg: clipping and Gaussian noise, with accounting
    "clip": _build_clip,                # the same clipping and unweighted mean, no noise (the non-private twin)
}


#: the trace columns each mechanism records (state.metrics)
MECHANISM_RECORDS = {"laplace_epm": ("snr", "snr_code"),
                     "gaussian": ("dp_epsilon", "dp_noise_multiplier", "clip_fraction"),
                     "clip": ("dp_noise_multiplier", "clip_fraction")}


def build_mechanism(spec: dict | None):
    """The mechanism of an experiment's ``mechanism`` block (None, ``{}`` or ``{name: none}``:
    no mechanism)."""
    if not spec or spec.get("name") in (None, "none"):
        return None
    name = spec["name"]
    if name not in MECHANISMS:
        raise ValueError(f"unknown mechanism {name!r}: mechanism.name must be one of {sorted(MECHANISMS)} or none")
    return MECHANISMS[name](spec)
