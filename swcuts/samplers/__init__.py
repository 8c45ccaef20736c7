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
from .registry import REGISTRY, SamplerSpec, sampler_spec

#: Kernel classes by the names users type (the single-kernel samplers of
#: :data:`~.registry.REGISTRY`).
KERNELS = {spec.name: spec.kernel for spec in REGISTRY if not spec.hierarchical}

#: Other names for kernels (none yet; ``swc`` is its own tuned kernel).
ALIASES = {alias: spec.name for spec in REGISTRY for alias in spec.aliases}

__all__ = ["KERNELS", "ALIASES", "REGISTRY", "SamplerSpec", "sampler_spec", "StepInfo",
           "TargetProposal", "metropolis_hastings", "seed_compiled_rng", "SWC", "SWC1", "SWC2",
           "ClusterGibbs", "Gibbs", "SwendsenWang", "SplitMerge", "RandomSplit", "Multiflip",
           "Multigrid", "Reconfiguration", "SRM", "TreeGuided", "Triadic"]
