"""Kernels: each has ``step(state, rng, temperature) -> StepInfo``."""

from .common import StepInfo, TargetProposal, metropolis_hastings, seed_compiled_rng
from .gibbs import Gibbs
from .sw_potts import SwendsenWang
from .swc import SWC1, SWC2, ClusterGibbs

#: Kernel classes by the names users type.
KERNELS = {
    "swc1": SWC1,
    "swc2": SWC2,
    "cluster-gibbs": ClusterGibbs,
    "gibbs": Gibbs,
}

#: ``swc`` is an alias for the best default SW-cut kernel.
ALIASES = {"swc": "swc2"}

__all__ = ["KERNELS", "ALIASES", "StepInfo", "TargetProposal", "metropolis_hastings",
           "seed_compiled_rng", "SWC1", "SWC2", "ClusterGibbs", "Gibbs", "SwendsenWang"]
