"""Kernels: each has ``step(state, rng, temperature) -> StepInfo``."""

from .common import StepInfo, TargetProposal, metropolis_hastings, seed_compiled_rng
from .gibbs import Gibbs
from .sw_potts import SwendsenWang
from .swc import SWC, SWC1, SWC2, ClusterGibbs
from .split_merge import RandomSplit, SplitMerge
from .reconfiguration import SRM, Reconfiguration
from .tree_guided import TreeGuided
from .triadic import Triadic
from .multiflip import Multiflip
from .multigrid import Multigrid

#: Kernel classes by the names users type.
KERNELS = {
    "swc": SWC,
    "swc1": SWC1,
    "swc2": SWC2,
    "cluster-gibbs": ClusterGibbs,
    "multiflip": Multiflip,
    "multigrid": Multigrid,
    "gibbs": Gibbs,
    "split-merge": SplitMerge,
    "random-split": RandomSplit,
    "reconfiguration": Reconfiguration,
    "srm": SRM,
    "triadic": Triadic,
    "tree-guided": TreeGuided,
}

#: Other names for kernels (none yet; ``swc`` is its own tuned kernel).
ALIASES = {}

__all__ = ["KERNELS", "ALIASES", "StepInfo", "TargetProposal", "metropolis_hastings",
           "seed_compiled_rng", "SWC", "SWC1", "SWC2", "ClusterGibbs", "Gibbs", "SwendsenWang",
           "SplitMerge", "RandomSplit", "Multiflip", "Multigrid", "Reconfiguration", "SRM", "TreeGuided", "Triadic"]
