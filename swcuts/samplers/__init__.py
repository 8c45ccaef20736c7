"""Kernels: each has ``step(state, rng, temperature) -> StepInfo``.

Only SW cuts' kernels (the default sampler's) are imported with the package;
the others, and :data:`KERNELS`' entries, are imported on first use (a run of
the default sampler does not load them: ~0.1 s of every run, issue 37).
"""

import importlib
from collections.abc import Mapping

from swcuts.samplers.common import StepInfo, TargetProposal, metropolis_hastings, seed_compiled_rng
from swcuts.samplers.swc import SWC, SWC1, SWC2, ClusterGibbs
from swcuts.samplers.registry import REGISTRY, SamplerSpec, kernel_class, sampler_spec

#: The module of each kernel class imported on first use.
_LAZY = {
    "Gibbs": "gibbs", "SwendsenWang": "sw_potts", "SplitMerge": "split_merge",
    "RandomSplit": "split_merge", "SRM": "reconfiguration.kernel",
    "Reconfiguration": "reconfiguration.kernel", "TreeGuided": "tree_guided.kernel",
    "Triadic": "triadic.kernel", "Multiflip": "multiflip", "Multigrid": "multigrid",
}


class _Kernels(Mapping):
    """Kernel classes by name, each imported when first looked up."""

    def __init__(self, specs):
        self._specs = {spec.name: spec for spec in specs}

    def __getitem__(self, name):
        return kernel_class(self._specs[name].kernel)

    def __iter__(self):
        return iter(self._specs)

    def __len__(self):
        return len(self._specs)

    def __repr__(self):
        return f"KERNELS({', '.join(self._specs)})"


#: Kernel classes by the names users type (the single-kernel samplers of
#: :data:`~.registry.REGISTRY`).
KERNELS = _Kernels(spec for spec in REGISTRY if not spec.hierarchical)

#: Other names for kernels (none yet; ``swc`` is its own tuned kernel).
ALIASES = {alias: spec.name for spec in REGISTRY for alias in spec.aliases}

__all__ = ["KERNELS", "ALIASES", "REGISTRY", "SamplerSpec", "sampler_spec", "StepInfo",
           "TargetProposal", "metropolis_hastings", "seed_compiled_rng", "SWC", "SWC1", "SWC2",
           "ClusterGibbs", "Gibbs", "SwendsenWang", "SplitMerge", "RandomSplit", "Multiflip",
           "Multigrid", "Reconfiguration", "SRM", "TreeGuided", "Triadic"]


def __getattr__(name):
    """A kernel class of :data:`_LAZY`, or a submodule, imported on first use."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    else:
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
