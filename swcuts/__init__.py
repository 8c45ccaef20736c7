"""swcuts: image segmentation by sampling a Bayesian posterior over graph
partitions with Swendsen-Wang cuts (Barbu & Zhu).

The public API is declared once, in ``__init__.pyi``; its names and the
subpackages load on first use (``lazy_loader``, as scikit-image does), so
that ``import swcuts`` and the command line start at once, and an
interrupt while the heavy dependencies load is one line, not a traceback
(see :mod:`swcuts.cli`).

The subpackages, from the front ends down (each imports only those below):

- :mod:`swcuts.cli` — the ``swcuts`` command line, one module per command;
- :mod:`swcuts.segmentation`, :mod:`swcuts.motion`, :mod:`swcuts.clustering`,
  :mod:`swcuts.evaluation` — what users call: ``segment``, ``segment_motion``,
  ``cluster``, ``benchmark`` and their scores and data;
- :mod:`swcuts.inference` — the annealing driver, posterior samples, diagnostics;
- :mod:`swcuts.samplers` — one module (or folder) per kernel, and their registry;
- :mod:`swcuts.models` — the posteriors π and the partition state;
- :mod:`swcuts.graph`, :mod:`swcuts.image` — the region graph and its edge
  probabilities; image preparation and atoms;
- :mod:`swcuts.io` — files in and out;
- :mod:`swcuts._numba` — the compiled plumbing everything may use.
"""

import lazy_loader as _lazy

__version__ = "0.2.0"

__getattr__, __dir__, __all__ = _lazy.attach_stub(__name__, __file__)
__all__ = [*__all__, "__version__"]
