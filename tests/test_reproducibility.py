"""A seed with a step budget gives the same segmentation in another process, for every sampler."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from swcuts import SAMPLERS, segment

OPTIONS = dict(steps=300, n_atoms=40, seed=7)

SCRIPT = """
import sys
import numpy as np
from swcuts import SAMPLERS, segment
image = np.load(sys.argv[1])
out = {s: segment(image, sampler=s, steps=300, n_atoms=40, seed=7).labels for s in SAMPLERS}
np.savez(sys.argv[2], **out)
"""


def test_same_seed_and_steps_same_labels_in_another_process(tmp_path):
    rng = np.random.default_rng(0)
    image = np.full((16, 20), 0.2)
    image[:, 10:] = 0.8
    image = np.clip(image + 0.05 * rng.standard_normal(image.shape), 0, 1)
    np.save(tmp_path / "image.npy", image)
    subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path / "image.npy"), str(tmp_path / "labels.npz")],
                   check=True, timeout=600)
    other = np.load(tmp_path / "labels.npz")
    for sampler in SAMPLERS:
        here = segment(image, sampler=sampler, **OPTIONS).labels
        np.testing.assert_array_equal(here, other[sampler], err_msg=sampler)
