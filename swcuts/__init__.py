"""swcuts: image segmentation by sampling a Bayesian posterior over graph
partitions with Swendsen-Wang cuts (Barbu & Zhu).

The public names load on first use (PEP 562), so that ``import swcuts``
and the command line start at once, and an interrupt while the heavy
dependencies load is one line, not a traceback (see :mod:`swcuts.console`).
"""

import importlib

__version__ = "0.1.0"

#: Public name -> the module that defines it.
_EXPORTS = {
    "segment": "api", "energy": "posterior_energy", "energy_terms": "posterior_energy", "Segmentation": "api", "SAMPLERS": "api",
    "benchmark": "benchmarking",
    "cluster": "clustering", "Clustering": "clustering", "MIXTURE_MODELS": "clustering",
    "segment_motion": "motion", "MotionSegmentation": "motion",
    "sample_posterior": "posterior", "PosteriorSamples": "posterior",
    "load_image": "imageio",
}

__all__ = ["segment", "energy", "energy_terms", "benchmark", "Segmentation", "cluster", "Clustering", "SAMPLERS", "MIXTURE_MODELS",
           "segment_motion", "MotionSegmentation", "sample_posterior", "PosteriorSamples", "load_image",
           "__version__"]


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    try:  # a submodule, as after an eager import: swcuts.metrics, ...
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_EXPORTS))
