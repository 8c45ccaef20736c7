# The public API of swcuts, declared once: each name, the module that defines it.
# swcuts/__init__.py loads them on first use (lazy_loader.attach_stub).

from . import (cli, clustering, evaluation, graph, image, inference, io, models, motion, samplers,
               segmentation)
from .clustering import MIXTURE_MODELS, Clustering, cluster
from .evaluation.benchmarking.driver import benchmark
from .inference.posterior_samples import PosteriorSamples
from .io.errors import InputError
from .io.flow import read_flo, write_flo
from .io.image_read import load_image
from .motion.segment import MotionSegmentation, segment_motion
from .segmentation.energy import energy, energy_terms
from .segmentation.image_models import MODELS
from .segmentation.options import SAMPLERS
from .segmentation.posterior import sample_posterior
from .segmentation.result import Segmentation
from .segmentation.segment import segment

__all__ = [
    "segment", "Segmentation", "energy", "energy_terms", "SAMPLERS", "MODELS",
    "sample_posterior", "PosteriorSamples",
    "segment_motion", "MotionSegmentation",
    "cluster", "Clustering", "MIXTURE_MODELS",
    "benchmark",
    "load_image", "read_flo", "write_flo", "InputError",
    "cli", "clustering", "evaluation", "graph", "image", "inference", "io", "models", "motion",
    "samplers", "segmentation",
]
