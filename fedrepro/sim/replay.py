"""Replay another implementation's randomness in the simulation loop.

A :class:`Replay` replaces the loop's own draws with recorded ones so that a run can be
compared with another implementation draw for draw:

* ``selections`` -- the clients of every communication round (instead of
  :class:`fedrepro.core.sampling.UniformSampler`), read by :func:`load_selections` from a CSV
  with header ``round,client`` (one row per selected client, both 0-based; ``round`` r is
  the selection made before round r's local work). The file must cover rounds
  0..R-1 without a gap; a run may perform at most R rounds (checked before it starts).
  Each round's clients are kept in the order the file lists them (rows of different rounds may
  interleave; a round's order is the order of its rows), not sorted: ``ctx.clients(r)`` gives
  them in that order, so a source that iterates its clients in the order it drew them
  (``np.random.choice``, ``randperm``) is replayed in that order. Whatever is drawn or consumed
  per selected client by position follows it (replayed noise rows, below; the rows of a minibatch
  draw over all the round's clients; FedADMM-Gong's training order with ``client_order:
  selection``). A client listed twice in a round is an error. :func:`write_selections` writes the
  same format, and ``fedrepro run --record-selections`` records a run's own selections (sampled
  or replayed, in the order it used them) so that it can be replayed by itself.
* ``noise`` -- an (N, n) array of unit-scale draws (``.npy``, :func:`load_noise`) that the
  run consumes in call order instead of drawing from its ``init``/``noise`` streams
  (:meth:`fedrepro.algorithms.base.RunContext.unit_noise`): for FedEPM/SFedAvg/SFedProx
  first m rows for the initial uploads z_i^0 of clients 0..m-1 (unless ``init_noise=zero``),
  then, with the ``laplace_epm`` mechanism, per round one row per uploading client in the order
  the round's clients were selected (the order of ``ctx.clients(r)``: ascending ids under the
  default sampler, the file's order under replayed selections). The consumer scales the rows by
  its own rule (nu_i * xi_i, init_scale * xi_i).

Files are validated where they enter (every row, before the run); what depends on the
problem (client ids < m, width n, rounds >= max_rounds) is checked by :meth:`Replay.check`,
which the driver (:func:`fedrepro.sim.driver.drive`) calls before any work.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["Replay", "ReplayError", "NoiseCursor", "load_selections", "write_selections", "load_noise",
           "load_replay"]

HEADER = ["round", "client"]


class ReplayError(ValueError):
    """A replay file or a replay that does not fit the run (the message names file and row)."""


def load_selections(path: str | Path, lines: dict | None = None) -> dict[int, np.ndarray]:
    """``{round: client ids}`` from a ``round,client`` CSV, each round's ids in the order its rows
    come in the file (see the module docstring).

    ``lines``, if given, receives ``{(round, client): line number}`` (for later messages).

    Raises :class:`ReplayError` naming the file and the offending line for a malformed header, a
    non-integer or negative value, a duplicate (round, client) row, an empty file or a
    round missing between 0 and the largest round.
    """
    path = Path(path)
    if not path.is_file():
        raise ReplayError(f"replay selections file {path} does not exist")
    rows: dict[int, dict[int, int]] = {}
    with open(path, newline="", encoding="utf-8-sig") as fh:      # tolerate a byte-order mark
        reader = csv.reader(fh)
        header = next(reader, None)
        if header is None or [h.strip() for h in header] != HEADER:
            raise ReplayError(f"{path}, line 1: the header must be exactly 'round,client' "
                             f"(one row per selected client); got {','.join(header or [])!r}")
        for row in reader:
            line = reader.line_num
            if not row or all(not x.strip() for x in row):
                continue
            if len(row) != 2:
                raise ReplayError(f"{path}, line {line}: expected 2 values 'round,client', got {row}")
            try:
                r, i = (int(x.strip()) for x in row)
            except ValueError:
                raise ReplayError(f"{path}, line {line}: round and client must be integers, got {row}") from None
            if r < 0 or i < 0:
                raise ReplayError(f"{path}, line {line}: round and client are 0-based, got round={r}, client={i}")
            first = rows.setdefault(r, {}).setdefault(i, line)
            if first != line:
                raise ReplayError(f"{path}, line {line}: duplicate row round={r}, client={i} (first on line {first})")
    if not rows:
        raise ReplayError(f"{path}: no selections (it needs one row per selected client under 'round,client')")
    missing = sorted(set(range(max(rows) + 1)) - set(rows))
    if missing:
        raise ReplayError(f"{path}: round {missing[0]} has no selected client; the file must cover rounds "
                         f"0..{max(rows)} without a gap (missing: {missing[:10]}{' ...' if len(missing) > 10 else ''})")
    if lines is not None:
        lines.update({(r, i): line for r, ids in rows.items() for i, line in ids.items()})
    return {r: np.fromiter(ids, dtype=np.int64, count=len(ids)) for r, ids in sorted(rows.items())}


def write_selections(path: str | Path, selections: dict) -> Path:
    """Write ``{round: client ids}`` as the ``round,client`` CSV :func:`load_selections` reads: rounds
    ascending, each round's ids in the order given (the order a run used them)."""
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADER)
        for r in sorted(selections):
            writer.writerows((int(r), int(i)) for i in np.asarray(selections[r]).ravel())
    return path


def load_noise(path: str | Path) -> np.ndarray:
    """The (N, n) float64 array of unit-scale draws in a ``.npy`` file (finite values only)."""
    path = Path(path)
    if not path.is_file():
        raise ReplayError(f"replay noise file {path} does not exist")
    try:
        draws = np.load(path, allow_pickle=False)
    except (ValueError, OSError) as err:
        raise ReplayError(f"{path} is not a .npy array file ({err})") from None
    if draws.ndim != 2 or not (np.issubdtype(draws.dtype, np.floating) or np.issubdtype(draws.dtype, np.integer)):
        raise ReplayError(f"{path}: replay noise must be a 2-D real array (N draws, n model entries); "
                         f"got shape {draws.shape}, dtype {draws.dtype}")
    draws = draws.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(draws).all(axis=1))
    if bad.size:
        raise ReplayError(f"{path}: row {bad[0]} holds a non-finite value ({bad.size} such rows)")
    return draws


@dataclass
class NoiseCursor:
    """The replayed draws of one run, handed out in call order (:meth:`take`)."""

    draws: np.ndarray
    source: str = "replayed noise"
    used: int = 0

    def take(self, shape, where: str) -> np.ndarray:
        """The next prod(shape[:-1]) rows, reshaped to ``shape`` (last axis = the row width)."""
        shape = tuple(int(s) for s in shape)
        N, n = self.draws.shape
        if shape[-1] != n:
            raise ReplayError(f"{self.source}: rows have {n} entries but {shape[-1]} are needed for {where} "
                             "(one entry per model coordinate)")
        k = int(np.prod(shape[:-1], dtype=np.int64))
        if self.used + k > N:
            raise ReplayError(f"{self.source} has {N} rows but {where} needs {k} more (rows {self.used}.."
                             f"{self.used + k - 1}): supply at least {self.used + k} rows")
        out = self.draws[self.used:self.used + k].reshape(shape)
        self.used += k
        return out


@dataclass
class Replay:
    """Recorded randomness a run uses instead of its own (see the module docstring).

    selections : ``{round: client ids}`` for rounds 0..R-1, each round's ids in the order the run is to
        use them (kept as given, not sorted; distinct within a round), or None (sample as usual).
    noise : (N, n) unit-scale draws consumed in call order, or None (draw as usual).
    sources : ``{"selections": ..., "noise": ...}`` names used in error messages.
    lines : ``{(round, client): line}`` of the selections file (for error messages).
    """

    selections: dict | None = None
    noise: np.ndarray | None = None
    sources: dict = field(default_factory=dict)
    lines: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.selections is not None:
            self.selections = {int(r): np.array(c, dtype=np.int64).ravel() for r, c in self.selections.items()}
            rounds = sorted(self.selections)
            if rounds != list(range(len(rounds))):
                raise ReplayError(f"{self._src('selections')}: selections must cover rounds 0..R-1 without a gap; "
                                 f"got rounds {rounds[:10]}")
            for r, c in self.selections.items():
                if c.size == 0 or np.unique(c).size != c.size:
                    raise ReplayError(f"{self._src('selections')}: round {r} must select distinct clients, got {c}")
        if self.noise is not None:
            self.noise = np.asarray(self.noise, dtype=np.float64)
            if self.noise.ndim != 2:
                raise ReplayError(f"{self._src('noise')}: noise must be 2-D (N, n), got shape {self.noise.shape}")

    def _src(self, what: str) -> str:
        return self.sources.get(what, f"replayed {what}")

    @property
    def rounds(self) -> int | None:
        """R, the number of rounds the selections cover (None without selections)."""
        return None if self.selections is None else len(self.selections)

    def check(self, m: int, n: int, max_rounds: int) -> None:
        """Raise :class:`ReplayError` (naming the file and row) if the replay cannot drive a run of
        ``max_rounds`` rounds on m clients with n model entries."""
        if self.selections is not None:
            for r, c in self.selections.items():
                if c.max() >= m or c.min() < 0:
                    bad = int(c[(c >= m) | (c < 0)][0])
                    line = self.lines.get((r, bad))
                    raise ReplayError(f"{self._src('selections')}, {f'line {line}' if line else 'row'} "
                                     f"(round={r}, client={bad}): client ids "
                                     f"must be in 0..{m - 1} (the problem has m = {m} clients)")
            if max_rounds > self.rounds:
                raise ReplayError(f"{self._src('selections')} covers rounds 0..{self.rounds - 1} but the run may "
                                 f"perform {max_rounds} rounds (max_rounds = {max_rounds}); set max_rounds "
                                 f"(CLI --rounds) to at most {self.rounds}, or add the missing rounds")
        if self.noise is not None and self.noise.shape[1] != n:
            raise ReplayError(f"{self._src('noise')} has rows of {self.noise.shape[1]} entries; the model has "
                             f"n = {n} (one column per model coordinate)")

    def clients(self, r: int) -> np.ndarray:
        """The clients selected for round r, in the order the selections list them."""
        try:
            return self.selections[r].copy()
        except KeyError:
            raise ReplayError(f"{self._src('selections')} covers rounds 0..{self.rounds - 1}, but the run asked "
                              f"for the clients of round {r}") from None

    def without_selections(self) -> "Replay | None":
        """This replay's noise alone (None without noise): what the loop takes when the selections are
        served by a sampler built on :meth:`clients` (e.g. a recording one, checked beforehand)."""
        if self.noise is None:
            return None
        return Replay(noise=self.noise, sources={k: v for k, v in self.sources.items() if k == "noise"})

    def noise_cursor(self) -> NoiseCursor | None:
        """A fresh cursor over the noise rows (one per run), or None without noise."""
        return None if self.noise is None else NoiseCursor(self.noise, self._src("noise"))


def load_replay(selections: str | Path | None = None, noise: str | Path | None = None) -> Replay | None:
    """A :class:`Replay` from a selections CSV and/or a noise ``.npy`` (None when neither is given)."""
    if selections is None and noise is None:
        return None
    sources, lines = {}, {}
    if selections is not None:
        sources["selections"] = f"replay selections file {selections}"
    if noise is not None:
        sources["noise"] = f"replay noise file {noise}"
    return Replay(selections=None if selections is None else load_selections(selections, lines),
                  noise=None if noise is None else load_noise(noise), sources=sources, lines=lines)
