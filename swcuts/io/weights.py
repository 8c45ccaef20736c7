"""Trained weights shipped as ``.npz`` files (the boundary detector, the
learned edge probabilities): read once per file and cached, checked, refused
in one line that names the file and the command that rebuilds it; written
atomically."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import numpy as np

from swcuts.io.errors import InputError, one_line, show_path
from swcuts.io.image_write import atomic_write

__all__ = ["WeightsFile", "write_weights"]


class WeightsFile:
    """One kind of weights file: its description, format version and the
    command that rebuilds it.

    Examples
    --------
    >>> import tempfile
    >>> kind = WeightsFile("demo weights", 1, "python make_demo.py")
    >>> path = Path(tempfile.mkdtemp()) / "demo.npz"
    >>> write_weights(path, {"format_version": np.int64(1), "w": np.ones(2)})
    >>> kind.load(path, lambda data, p: float(kind.array(data, "w", p).sum()))
    2.0
    >>> kind.load(path.with_name("gone.npz"), None)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    swcuts.io.errors.InputError: demo weights ...gone.npz: no such file; rebuild them with: python make_demo.py
    """

    def __init__(self, what: str, version: int, rebuild: str):
        self.what, self.version, self.rebuild = what, int(version), rebuild
        self._cache: dict = {}
        self._lock = threading.Lock()

    def refuse(self, path, why):
        """Raise the one-line :class:`InputError` of a bad file."""
        raise InputError(f"{self.what} {show_path(path)}: {why}; rebuild them with: {self.rebuild}")

    def load(self, path, parse, read=None):
        """``parse(arrays, path)`` of the file at ``path``, cached per file;
        ``arrays`` is every array of a readable file of this version, or
        what ``read(path)`` returns for a file in another format (any
        exception of ``read`` but an :class:`InputError` is the file's
        "unreadable" line)."""
        p = Path(os.fspath(path))
        key = str(p.resolve()) if p.exists() else str(p)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        if not p.is_file():
            self.refuse(p, "no such file")
        try:
            if read is not None:
                data = read(p)
            else:
                with np.load(p, allow_pickle=False) as z:
                    data = {k: z[k] for k in z.files}
        except InputError:
            raise
        except Exception as exc:  # a corrupt zip, a truncated file, not an npz
            self.refuse(p, f"unreadable ({one_line(exc)})")
        if read is None:
            version = data.get("format_version")
            if version is None or int(version) != self.version:
                self.refuse(p, f"format version {None if version is None else int(version)}, "
                               f"this swcuts reads {self.version}")
        value = parse(data, p)
        with self._lock:
            self._cache[key] = value
        return value

    def array(self, data, key, path) -> np.ndarray:
        """``data[key]`` as float64, refused if missing or not finite."""
        if key not in data:
            self.refuse(path, f"no array '{key}'")
        a = np.asarray(data[key], dtype=np.float64)
        if not np.isfinite(a).all():
            self.refuse(path, f"array '{key}' is not finite")
        return a

    def forget(self) -> None:
        """Empty the cache (after a file was rewritten)."""
        with self._lock:
            self._cache.clear()


def write_weights(path, arrays: dict) -> None:
    """Write ``arrays`` to the ``.npz`` file ``path`` atomically
    (:func:`swcuts.io.image_write.atomic_write`)."""
    atomic_write(path, lambda tmp: np.savez_compressed(tmp, **arrays))
