"""Write the sample images of the repository into this folder.

Run from anywhere as ``python sample_images/make_samples.py``. Writes:

* ``fig7.png`` / ``fig7_truth.png``: :func:`swcuts.evaluation.synthetic.images.make_fig7`
  (8-bit grey image, 16-bit label image with labels 0..K-1);
* ``shapes_colour.png`` / ``shapes_colour_truth.png``: a colour image from
  :func:`swcuts.evaluation.synthetic.images.make_synthetic` (8-bit RGB, 16-bit labels);
* ``coffee.png``, ``camera.png``, ``astronaut.png``: natural photos from
  :mod:`skimage.data`, downscaled to 200 pixels wide.

The output is deterministic (fixed seeds).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the swcuts package of this checkout

from skimage import data, io  # noqa: E402
from skimage.transform import resize  # noqa: E402
from skimage.util import img_as_ubyte  # noqa: E402

from swcuts.evaluation.synthetic.images import make_fig7, make_synthetic  # noqa: F401

PHOTO_WIDTH = 200


def _save(name: str, array: np.ndarray) -> None:
    path = HERE / name
    io.imsave(path, array, check_contrast=False)
    print(f"wrote {path.relative_to(HERE.parent)}  {array.shape} {array.dtype}"
          f"  {path.stat().st_size / 1024:.1f} KB")


def _to_u8(image: np.ndarray) -> np.ndarray:
    return img_as_ubyte(np.clip(image, 0.0, 1.0))


def _downscale(image: np.ndarray, width: int = PHOTO_WIDTH) -> np.ndarray:
    h, w = image.shape[:2]
    height = max(1, round(h * width / w))
    out = resize(image, (height, width) + image.shape[2:], anti_aliasing=True)
    return _to_u8(out)


def main() -> None:
    image, truth = make_fig7()
    _save("fig7.png", _to_u8(image))
    _save("fig7_truth.png", truth.astype(np.uint16))

    image, truth = make_synthetic((120, 160), colour=True, noise="medium", seed=7)
    _save("shapes_colour.png", _to_u8(image))
    _save("shapes_colour_truth.png", truth.astype(np.uint16))

    _save("coffee.png", _downscale(data.coffee()))
    _save("camera.png", _downscale(data.camera()))
    _save("astronaut.png", _downscale(data.astronaut()))


if __name__ == "__main__":
    main()
