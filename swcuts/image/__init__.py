"""From a user's image to atoms: validation and conversion, over-segmentation into atomic regions."""
