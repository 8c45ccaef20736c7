"""Replica exchange (parallel tempering) between temperatures, with exact swap moves.

K replicas of a chain run at temperatures ``1 = T_1 < T_2 < ... < T_K``, each
with its own kernel, which leaves ``π^(1/T_k)`` invariant (the annealing
driver's convention: the target at temperature T is π^(1/T)). The joint
target over the replicas' states ``x = (x_1, ..., x_K)`` is the product

    Π(x) ∝ Π_k π(x_k)^(1/T_k) = exp(−Σ_k E(x_k) / T_k),   E = −log π.

A *swap* of the states at temperatures ``T_i`` and ``T_j`` proposes
``x' = x`` with ``x_i`` and ``x_j`` exchanged. The proposal is symmetric
(swapping twice is the identity), so Metropolis-Hastings accepts it with
``min(1, Π(x') / Π(x))``, and

    log Π(x') − log Π(x) = −E_j/T_i − E_i/T_j + E_i/T_i + E_j/T_j
                         = (1/T_i − 1/T_j) (E_i − E_j),

:func:`swap_log_ratio`. An additive constant in E (π known up to its
normaliser) cancels, since it enters E_i − E_j twice with opposite signs. A
colder replica holding the higher energy always hands it up. Each swap
leaves Π invariant (detailed balance), and so does every replica's kernel
step (it changes one coordinate under its own conditional, which is
π^(1/T_k) since Π factorises): any sequence of them — here the
deterministic even/odd alternation of adjacent pairs (Okabe et al. 2001;
Syed et al. 2022, "non-reversible parallel tempering", which makes the
index process travel the ladder ballistically) — leaves Π invariant, and
its marginal at T_1 = 1 is π. ``tests/test_tempering.py`` proves it by
exact enumeration over the joint states of two and three replicas on a
4-vertex graph (15 partitions each), with a swap rule missing a factor as
the negative control.

The replicas' kernels never move: a swap exchanges which replica holds
which temperature (``holder``), not the states, so a kernel that keeps
caches of its state (tree-guided, reconfiguration) stays consistent. The
draws at T = 1 are those of whichever replica holds T_1.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["swap_log_ratio", "geometric_ladder", "ReplicaLadder", "TemperedChain", "tempering_summary"]


def swap_log_ratio(e_i, e_j, t_i, t_j) -> float:
    """log of Π(x') / Π(x) for exchanging the states at temperatures ``t_i`` and ``t_j``.

    Parameters
    ----------
    e_i, e_j : float
        Energies −log π (up to one shared constant) of the states at ``t_i`` and ``t_j``.
    t_i, t_j : float
        The two temperatures (> 0).

    Returns
    -------
    float
        ``(1/t_i − 1/t_j) (e_i − e_j)``; the swap is accepted with
        probability ``min(1, exp(result))``.

    Examples
    --------
    >>> swap_log_ratio(10.0, 4.0, 1.0, 2.0)  # the cold state is worse: always swapped
    3.0
    >>> swap_log_ratio(4.0, 10.0, 1.0, 2.0)
    -3.0
    """
    if math.isinf(e_i) and math.isinf(e_j):  # two impossible states: either order is as good
        return 0.0
    return (1.0 / t_i - 1.0 / t_j) * (e_i - e_j)


def geometric_ladder(k, t_max) -> np.ndarray:
    """``k`` temperatures from 1 to ``t_max``, equally spaced in log T.

    Examples
    --------
    >>> geometric_ladder(3, 4.0)
    array([1., 2., 4.])
    """
    k = int(k)
    if k < 1:
        raise ValueError(f"a ladder needs at least one temperature, got {k}")
    if k == 1:
        return np.ones(1)
    if not t_max > 1.0:
        raise ValueError(f"t_max must exceed 1 for more than one replica, got {t_max}")
    return float(t_max) ** (np.arange(k) / (k - 1))


class ReplicaLadder:
    """Replicas at a ladder of temperatures, with swaps of adjacent pairs.

    Parameters
    ----------
    replicas : list
        One object per temperature, each with a ``state`` (``log_pi``:
        log π at T = 1, ``partition``) and ``advance(n_steps,
        temperature)`` running its own kernel. Replica ``k`` starts at
        temperature ``temperatures[k]``.
    temperatures : (K,) float array
        Increasing, the first equal to 1 for sampling π.
    swap_every : int
        Kernel steps of every replica between two swap sweeps.

    Attributes
    ----------
    holder : (K,) int array
        ``holder[k]`` is the replica at temperature ``temperatures[k]``.
    attempts, accepts : (K - 1,) int arrays
        Swap attempts and acceptances between temperatures k and k + 1.

    Examples
    --------
    >>> class Replica:  # a stand-in whose "kernel" does nothing
    ...     def __init__(self, e):
    ...         self.state = type("S", (), {"log_pi": -e})()
    ...     def advance(self, n, temperature):
    ...         return 0
    >>> ladder = ReplicaLadder([Replica(5.0), Replica(1.0)], [1.0, 2.0], swap_every=1)
    >>> ladder.advance(1, np.random.default_rng(0))
    0
    >>> ladder.holder.tolist(), ladder.cold is ladder.replicas[1]   # the colder took the lower energy
    ([1, 0], True)
    """

    def __init__(self, replicas, temperatures, swap_every=1):
        self.replicas = list(replicas)
        self.temperatures = np.asarray(temperatures, dtype=np.float64)
        k = len(self.replicas)
        if self.temperatures.shape != (k,):
            raise ValueError(f"one temperature per replica: {k} replicas, "
                             f"{self.temperatures.size} temperatures")
        if k > 1 and not np.all(np.diff(self.temperatures) > 0):
            raise ValueError("temperatures must increase")
        self.swap_every = max(1, int(swap_every))
        self.holder = np.arange(k)
        self.attempts = np.zeros(max(k - 1, 0), dtype=np.int64)
        self.accepts = np.zeros(max(k - 1, 0), dtype=np.int64)
        self._parity = 0
        #: Direction of every replica's last visit to an end of the ladder
        #: (+1: last at T_1, −1: last at T_K, 0: neither yet), for round trips.
        self._last_end = np.zeros(k, dtype=np.int64)
        self.round_trips = 0

    @property
    def n_replicas(self) -> int:
        return len(self.replicas)

    @property
    def cold(self):
        """The replica at T_1."""
        return self.replicas[int(self.holder[0])]

    def energies(self) -> np.ndarray:
        """−log π of the state at every temperature, coldest first."""
        return np.array([-self.replicas[int(r)].state.log_pi for r in self.holder])

    def swap_sweep(self, rng) -> int:
        """One sweep of swaps: the pairs (k, k + 1) with k of one parity,
        the parity alternating from sweep to sweep. Returns the accepted swaps."""
        k_max = self.n_replicas - 1
        done = 0
        for k in range(self._parity, k_max, 2):
            a, b = int(self.holder[k]), int(self.holder[k + 1])
            log_r = swap_log_ratio(-self.replicas[a].state.log_pi, -self.replicas[b].state.log_pi,
                                   self.temperatures[k], self.temperatures[k + 1])
            self.attempts[k] += 1
            if log_r >= 0 or rng.random() < math.exp(log_r):
                self.holder[k], self.holder[k + 1] = b, a
                self.accepts[k] += 1
                done += 1
        self._parity = 1 - self._parity if k_max > 1 else 0
        if k_max >= 1:
            self._count_round_trips()
        return done

    def _count_round_trips(self):
        bottom, top = int(self.holder[0]), int(self.holder[-1])
        if self._last_end[bottom] == -1:  # came down from T_K to T_1
            self.round_trips += 1
        self._last_end[bottom] = 1
        self._last_end[top] = -1

    def advance(self, n_steps, rng) -> int:
        """``n_steps`` kernel steps of every replica at its temperature, a swap
        sweep after every ``swap_every`` of them. Returns the accepted kernel
        moves at T_1 (of whichever replica held it)."""
        done, accepted = 0, 0
        n_steps = int(n_steps)
        while done < n_steps:
            m = min(self.swap_every, n_steps - done)
            for k, r in enumerate(self.holder):
                acc = self.replicas[int(r)].advance(m, float(self.temperatures[k]))
                if k == 0:
                    accepted += int(acc)
            done += m
            if self.n_replicas > 1:
                self.swap_sweep(rng)
        return accepted

    def swap_acceptance(self) -> np.ndarray:
        """Accepted share of the swap attempts of every adjacent pair (nan: none tried)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(self.attempts > 0, self.accepts / np.maximum(self.attempts, 1), np.nan)


class TemperedChain:
    """One chain of replica exchange (a :class:`ReplicaLadder`) with the
    interface of one replica (``state``, ``advance``, ``best_log_pi``,
    ``best_labels``, ``steps``, ``compiled``): its ``state`` is the state at
    T = 1, ``advance`` runs every replica and the swaps. A run anneals the
    first replica (``base``) alone; :meth:`spread` then starts every replica
    from its state (:func:`swcuts.segmentation.posterior.sample_model`)."""

    def __init__(self, replicas, temperatures, swap_every, rng):
        self.ladder = ReplicaLadder(replicas, temperatures, swap_every=swap_every)
        self.rng = rng
        self.base = replicas[0]
        self.compiled = all(r.compiled for r in replicas)

    @property
    def state(self):
        return self.ladder.cold.state

    @property
    def best_log_pi(self):
        return max(r.best_log_pi for r in self.ladder.replicas)

    @property
    def best_labels(self):
        return max(self.ladder.replicas, key=lambda r: r.best_log_pi).best_labels

    @property
    def steps(self):
        return sum(r.steps for r in self.ladder.replicas)

    def spread(self, model):
        """Every replica starts where the first one is (after its annealing)."""
        labels = self.base.state.partition.labels
        for r in self.ladder.replicas[1:]:
            r.state.__dict__.update(model.new_state(labels.copy()).__dict__)

    def advance(self, n_steps, temperature=1.0):
        return self.ladder.advance(n_steps, self.rng)


def tempering_summary(runs) -> dict:
    """Swap acceptance per adjacent pair and round trips over the
    :class:`TemperedChain` s among ``runs`` (empty without any)."""
    ladders = [ch.ladder for ch in runs if isinstance(ch, TemperedChain)]
    if not ladders:
        return {}
    att = np.sum([lad.attempts for lad in ladders], axis=0)
    acc = np.sum([lad.accepts for lad in ladders], axis=0)
    return {"temperatures": [round(float(t), 4) for t in ladders[0].temperatures],
            "swap_acceptance": [float(a / t) if t else None for a, t in zip(acc, att)],
            "round_trips": int(sum(lad.round_trips for lad in ladders))}
