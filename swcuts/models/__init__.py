"""Target distributions over partitions of a graph."""

from swcuts.models.base import ModelState
from swcuts.models.image import ImageModel
from swcuts.models.mixture.model import MixtureModel
from swcuts.models.potts import PottsModel

__all__ = ["ModelState", "ImageModel", "MixtureModel", "PottsModel"]
