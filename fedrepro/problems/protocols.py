"""Problem capabilities: what an algorithm needs from a problem beyond :class:`FederatedProblem`.

:class:`~fedrepro.problems.base.FederatedProblem` declares the interface every problem has
(``m``, ``dim``, ``client_sizes``, ``weights``, ``client_losses``, ``client_grads``,
``objective``, ``gradient``, ``evaluate``, ``describe``). Some algorithms read more; each such
group of members is one :class:`Capability` below, named after the protocol a problem class
implements to provide it:

=========================  =========================================  ==========================
capability                 members                                    read by
=========================  =========================================  ==========================
``LipschitzProblem``       ``lipschitz()``                            fedadmm, fedavg, fedprox,
                                                                      fedalt, fedsim (step sizes)
``StochasticProblem``      ``sample_minibatch``, ``minibatch_grads``  frpg, lfrpg, rsa, krum,
                                                                      geomed, sgd_mean
``ByzantineProblem``       ``senders``                                frpg, lfrpg, rsa, krum,
                                                                      geomed, sgd_mean
``ConsensusProblem``       ``delta``, ``server_loss``, ``reliable``,  frpg, lfrpg, rsa
                           ``reliable_losses``
``StepConstantProblem``    ``L``                                      frpg, lfrpg (when ``L`` is
                                                                      not a parameter)
``LossKindProblem``        ``loss``                                   fedadmm (``r0_rule=code``)
``EpochProblem``           ``init_params``, ``epoch_batches``,        fedavg_sgd (local epochs of
                           ``batch_loss_grad``                        minibatch SGD)
``MinibatchLossProblem``   ``init_params``, ``parts``,                aspire, afl, drfa_prox
                           ``batch_loss_grad``, ``batch_loss``        (reported minibatch losses)
``NetworkProblem``         ``model``                                  aspire (dropout streams only
                                                                      when ``model.has_dropout``)
``MinibatchProblem``       ``init_params``, ``parts``,                fedavg_steps, individual
                           ``batch_loss_grad``                        (local steps on chosen samples)
=========================  =========================================  ==========================

Attacks (:mod:`fedrepro.sim.attacks`, ``problem_requires``) need two more: ``RelabelProblem``
(``flip_labels``: rewritable training labels of chosen clients; softmax, neural, worker_neural) for
``label_flip``, and ``BackdoorProblem`` (``backdoor``, ``malicious``: a worker added with triggered
data, prepared by the problem's builder from the attack's ``problem_options``; worker_neural) for
``backdoor``.

An algorithm lists what it needs in its class attribute ``requires`` (a tuple of capabilities;
default empty); an algorithm whose needs depend on its parameters extends
:meth:`~fedrepro.algorithms.base.Algorithm.requirements`. :func:`fedrepro.algorithms.pairing.check_pairing`
(in the algorithms' layer: it asks the algorithm, this module only answers for problems) rejects an
unsuitable algorithm x problem pairing with a message naming both, the missing capability and
a registered problem that has it. It runs at the start of :func:`fedrepro.sim.driver.drive`
(before anything touches the problem) and, from the problem builder's declared return class,
when a config's experiments are expanded (:func:`fedrepro.experiments.expansion.expand`), so no job starts.

A problem provides a capability when its class implements every member: a method, property or
class attribute defined on the class (a member inherited unchanged from ``FederatedProblem``,
such as the ``lipschitz`` stub that raises, does not count), or an instance attribute declared by
a class annotation (``delta: float``) and set in ``__init__``. On a built problem an instance
attribute counts when it is set. Nothing else has to be declared: implementing the members is
the declaration (structural typing, as :class:`typing.Protocol`).
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass

from fedrepro.problems.base import FederatedProblem


@dataclass(frozen=True)
class Capability:
    """One protocol: ``name`` (the protocol's name), ``what`` (in words, for messages) and the
    ``members`` a problem implements to provide it."""

    name: str
    what: str
    members: tuple

    def __str__(self):
        return f"{self.what} ({self.name}: {', '.join(self.members)})"


LIPSCHITZ = Capability("LipschitzProblem", "per-client Lipschitz constants", ("lipschitz",))
STOCHASTIC = Capability("StochasticProblem", "minibatch sampling", ("sample_minibatch", "minibatch_grads"))
BYZANTINE = Capability("ByzantineProblem", "a faulty-worker split", ("senders",))
CONSENSUS = Capability("ConsensusProblem", "the consensus objective's server term and reliable-worker losses",
                       ("delta", "server_loss", "reliable", "reliable_losses"))
STEP_CONSTANT = Capability("StepConstantProblem", "a dataset step constant", ("L",))
LOSS_KIND = Capability("LossKindProblem", "a named loss (squared | logistic)", ("loss",))
RELABEL = Capability("RelabelProblem", "rewritable training labels of chosen clients", ("flip_labels",))
BACKDOOR = Capability("BackdoorProblem", "a worker added with triggered training data and a triggered test set, "
                      "prepared when the problem is built", ("backdoor", "malicious"))
EPOCHS = Capability("EpochProblem", "epochs of shuffled minibatches and a model initialiser",
                    ("init_params", "epoch_batches", "batch_loss_grad"))
MINIBATCH_LOSS = Capability("MinibatchLossProblem", "minibatch gradients and losses on chosen samples of a client",
                            ("init_params", "parts", "batch_loss_grad", "batch_loss"))
NETWORK = Capability("NetworkProblem", "a neural-network model (fedrepro.nn.Model)", ("model",))
MINIBATCH = Capability("MinibatchProblem", "minibatch gradients on chosen samples of a client",
                       ("init_params", "parts", "batch_loss_grad"))

CAPABILITIES = (LIPSCHITZ, STOCHASTIC, BYZANTINE, CONSENSUS, STEP_CONSTANT, LOSS_KIND, RELABEL, BACKDOOR, EPOCHS,
                MINIBATCH_LOSS, NETWORK, MINIBATCH)

_MISSING = object()


def _has_member(problem, name: str) -> bool:
    cls = problem if isinstance(problem, type) else type(problem)
    attr = inspect.getattr_static(cls, name, _MISSING)
    if attr is not _MISSING:
        return attr is not inspect.getattr_static(FederatedProblem, name, _MISSING)
    if isinstance(problem, type):       # declared instance attribute (class annotation)
        return any(name in vars(k).get("__annotations__", {}) for k in cls.__mro__ if k is not FederatedProblem)
    return hasattr(problem, name)


def provides(problem, capability: Capability) -> bool:
    """Whether ``problem`` (a problem or a problem class) implements ``capability``."""
    return all(_has_member(problem, n) for n in capability.members)


def capabilities_of(problem) -> tuple:
    """The capabilities ``problem`` (instance or class) provides."""
    return tuple(c for c in CAPABILITIES if provides(problem, c))


def problems_providing(capabilities) -> list:
    """Registered problem names whose (declared) class provides every one of ``capabilities``."""
    from fedrepro.problems import problem_class, problem_names

    out = []
    for name in problem_names():
        cls = problem_class(name)
        if cls is not None and all(provides(cls, c) for c in capabilities):
            out.append(name)
    return out


__all__ = ["Capability", "CAPABILITIES", "LIPSCHITZ", "STOCHASTIC", "BYZANTINE", "CONSENSUS", "STEP_CONSTANT",
           "LOSS_KIND", "RELABEL", "BACKDOOR", "EPOCHS", "MINIBATCH_LOSS", "MINIBATCH", "provides", "capabilities_of",
           "problems_providing"]
