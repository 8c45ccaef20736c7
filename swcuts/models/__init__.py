"""Target distributions over partitions of a graph."""

from .base import ModelState
from .image import ImageModel
from .mixture import MixtureModel
from .potts import PottsModel

__all__ = ["ModelState", "ImageModel", "PottsModel"]
