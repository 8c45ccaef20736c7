"""Running kernels: the annealing driver, multi-level annealing, posterior samples and MCMC diagnostics."""

import lazy_loader as _lazy

# Submodules load on first use: swcuts.inference.<module> works after "import swcuts".
__getattr__, __dir__, __all__ = _lazy.attach(__name__, submodules=[
    "anneal", "budget", "burn_in", "chains", "diagnostics", "multilevel_anneal", "partition_stats",
    "posterior_samples", "sampling_phases", "tempering"
])
