"""Kernels: each has ``step(state, rng, temperature) -> StepInfo``."""

from swcuts.samplers.common import StepInfo, TargetProposal, metropolis_hastings, seed_compiled_rng
from swcuts.samplers.gibbs import Gibbs
from swcuts.samplers.sw_potts import SwendsenWang
from swcuts.samplers.swc import SWC, SWC1, SWC2, ClusterGibbs
from swcuts.samplers.split_merge import RandomSplit, SplitMerge
from swcuts.samplers.reconfiguration.kernel import SRM, Reconfiguration
from swcuts.samplers.tree_guided.kernel import TreeGuided
from swcuts.samplers.triadic.kernel import Triadic
from swcuts.samplers.multiflip import Multiflip
from swcuts.samplers.multigrid import Multigrid
from swcuts.samplers.registry import REGISTRY, SamplerSpec, sampler_spec

#: Kernel classes by the names users type (the single-kernel samplers of
#: :data:`~.registry.REGISTRY`).
KERNELS = {spec.name: spec.kernel for spec in REGISTRY if not spec.hierarchical}

#: Other names for kernels (none yet; ``swc`` is its own tuned kernel).
ALIASES = {alias: spec.name for spec in REGISTRY for alias in spec.aliases}

__all__ = ["KERNELS", "ALIASES", "REGISTRY", "SamplerSpec", "sampler_spec", "StepInfo",
           "TargetProposal", "metropolis_hastings", "seed_compiled_rng", "SWC", "SWC1", "SWC2",
           "ClusterGibbs", "Gibbs", "SwendsenWang", "SplitMerge", "RandomSplit", "Multiflip",
           "Multigrid", "Reconfiguration", "SRM", "TreeGuided", "Triadic"]
