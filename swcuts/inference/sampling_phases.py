"""The phases of posterior sampling, every chain in a pool of threads:
annealing to T = 1, a pilot at T = 1 (burn-in, autocorrelation time) and the
kept samples (:func:`run_phases`), with the diagnostics of what was kept
(:func:`diagnose`). The engine of
:func:`swcuts.segmentation.posterior.sample_model`, which makes the chains
and the arrays these fill.
"""

from __future__ import annotations

import math
import sys
import time
from contextlib import nullcontext

import numpy as np

from swcuts.inference import diagnostics as dg
from swcuts.inference.burn_in import burn_in, thinning
from swcuts.inference.chains import on_chains

__all__ = ["ANNEAL_RECORDS", "ANNEAL_TIME_SHARE", "PILOT_RECORDS", "PILOT_TIME_SHARE", "diagnose",
           "progress_bar", "run_phases"]

#: Records of the pilot run per chain (the autocorrelation time is measured on them).
PILOT_RECORDS = 200
#: Trace rows of each chain's annealing (one compiled call per row; the
#: trace is not kept, so few and long calls).
ANNEAL_RECORDS = 20
#: Share of a ``time_budget`` spent annealing and in the pilot run.
ANNEAL_TIME_SHARE = 0.3
PILOT_TIME_SHARE = 0.2


def progress_bar(progress, total, chains):
    """A tqdm bar over the kept samples on stderr when ``progress`` and stderr
    is a terminal, else a stand-in that does nothing."""
    if not (progress and sys.stderr.isatty()):
        return nullcontext(None)
    from tqdm import tqdm

    return tqdm(total=total, unit="sample", desc=f"annealing {chains} chains", leave=False,
                dynamic_ncols=True, file=sys.stderr)


def diagnose(energies, n_segs):
    """(r_hat, ess) dicts of the label-invariant statistics (nan for a
    statistic with an infinite value: an extreme prior weight)."""
    r, e = {}, {}
    for name, arr in (("energy", energies), ("n_segments", n_segs.astype(np.float64))):
        if not np.isfinite(arr).all():
            r[name] = e[name] = math.nan
            continue
        r[name] = dg.r_hat(arr) if arr.shape[1] >= 4 else math.nan
        e[name] = dg.effective_sample_size(arr) if arr.shape[1] >= 2 else math.nan
    return r, e


def run_phases(model, runs, pool, bar, phases, warnings, clock, *, thin, t0, anneal_steps,
                pilot_steps, share, time_budget, samples, energies, n_segs, accepted, steps_t1, trace):
    """The phases of :func:`~swcuts.segmentation.posterior.sample_model`, every chain through ``pool``:
    annealing, the pilot and the sampling (one task per chain and phase;
    with a time budget, the pilot and the sampling in rounds of one record
    or kept sample per chain). Fills the arrays, ``phases`` and
    ``warnings``; returns (thin, τ in steps, kept samples per chain)."""
    from swcuts.inference.anneal import Schedule, anneal

    chains, per_chain = samples.shape[:2]

    # 1. Anneal every chain to T = 1 (not below).
    def anneal_chain(ladder):
        ch = getattr(ladder, "base", ladder)
        if t0 > 1.0 and anneal_steps > 0:
            res = anneal(ch.kernel, ch.state, Schedule(t0, 1.0), rng=ch.rng,
                         steps=None if share else anneal_steps,
                         time_budget=ANNEAL_TIME_SHARE * share if share else None, keep_best=False,
                         n_records=ANNEAL_RECORDS)
            ch.steps += res.steps
            if -res.best_energy > ch.best_log_pi:
                ch.best_log_pi = -res.best_energy
                ch.best_labels[:] = res.best_labels
            # Exact cached log π before sampling (the driver keeps it exact; cheap to be sure).
            ch.state.log_pi = model.log_target(ch.state.partition.labels)
        if ladder is not ch:
            ladder.spread(model)

    pool.map(anneal_chain, runs)
    phases["anneal"] = time.perf_counter() - clock
    if bar is not None:
        bar.set_description("pilot at T = 1")

    def pilot_records(c, r0, r1):  # records r0..r1-1 of chain c
        ch = runs[c]
        for r in range(r0, r1):
            ch.advance(rec)
            pilot_e[c, r], pilot_k[c, r] = -ch.state.log_pi, ch.state.partition.n_labels

    def keep_samples(c, i0, i1):  # kept samples i0..i1-1 of chain c
        ch = runs[c]
        r = trace.shape[1] // samples.shape[1]  # records of −log π and K per kept sample (R-hat)
        for i in range(i0, i1):
            for j in range(r):
                accepted[c] += ch.advance(thin * (j + 1) // r - thin * j // r)
                trace[c, i * r + j] = -ch.state.log_pi, ch.state.partition.n_labels
            steps_t1[c] += thin
            samples[c, i] = ch.state.partition.compact_labels()
            energies[c, i], n_segs[c, i] = trace[c, i * r + r - 1]
            if bar is not None:
                bar.update(1)

    # Without a time budget every chain runs each phase as one task (the
    # threads take the next chain as they finish); with one, the chains
    # advance in rounds so that they share the budget evenly.
    # 2. Pilot at T = 1: burn-in, and the autocorrelation time in steps,
    # measured on the records after the burn-in.
    n_rec = PILOT_RECORDS if pilot_steps > 0 else 0
    rec = max(1, pilot_steps // max(n_rec, 1))
    pilot_e = np.zeros((chains, n_rec))
    pilot_k = np.zeros((chains, n_rec))
    pilot_end = None if share is None else PILOT_TIME_SHARE * share * chains
    start = time.perf_counter()
    rec_done = on_chains(pool, chains, n_rec, pilot_records, None if pilot_end is None else
                          lambda r: r >= 8 and time.perf_counter() - start > pilot_end)
    # The descent is burn-in, by the MSER rule (at most half the pilot):
    # the autocorrelation time is that of the records after it.
    burn = burn_in([pilot_e[:, :rec_done], pilot_k[:, :rec_done]])
    pilot_e, pilot_k = pilot_e[:, burn:rec_done], pilot_k[:, burn:rec_done]
    rec_done -= burn
    tau_rec = thinning([pilot_e, pilot_k], burn=0)[0] if rec_done >= 4 else math.nan
    tau_steps = tau_rec * rec if math.isfinite(tau_rec) else math.nan
    if thin is None:
        if n_rec == 0:
            raise ValueError("without a pilot run (pilot_steps=0) give thin")
        thin = max(1, int(math.ceil(tau_steps))) if math.isfinite(tau_steps) else rec
        if math.isfinite(tau_rec) and tau_rec * 20 > rec_done:
            warnings.append(f"the pilot run ({rec_done} records) is short for the measured "
                            f"autocorrelation time ({tau_rec:.1f} records): thin={thin} steps "
                            f"may be too small; use a longer pilot or a larger thin")
    phases["pilot"] = time.perf_counter() - clock - phases["anneal"]
    if bar is not None:
        bar.set_description(f"sampling {chains} chains at T = 1")

    # 3. Sample at T = 1, chains in rounds.
    t_start = time.perf_counter()
    kept = on_chains(pool, chains, per_chain, keep_samples, None if time_budget is None else
                      lambda i: i >= 4 and time.perf_counter() - clock > time_budget)
    if kept < per_chain:
        warnings.append(f"the time budget ran out after {kept} samples per chain "
                        f"({kept * chains} of {per_chain * chains})")
    phases["sampling"] = time.perf_counter() - t_start
    return thin, tau_steps, kept
