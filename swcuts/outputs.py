"""Writing a command's output files as one unit.

Every file of a run is written into a hidden staging folder beside the
output folder; only when all of them are complete are they moved into
place (one ``os.replace`` each, with SIGINT and SIGTERM held back for the
few milliseconds that takes). A run that fails or is interrupted before
that leaves the output folder exactly as it was: an earlier run's files
intact, no temporary files, no folder it created. A run killed outright
(SIGKILL) cannot clean up; its staging folder names its process, and the
next run into the same folder removes it.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import shutil
import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Sequence

from .imageio import InputError, _short_write, _show

__all__ = ["write_output_set", "missing_dirs", "json_text"]


def _finite(value):
    """``value`` with every NaN or infinite float replaced by None (JSON has neither)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def json_text(value) -> str:
    """Strictly valid JSON of ``value`` (NaN and infinities as null; numpy
    scalars and other objects as their ``str``), indented, with a newline."""
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    return json.dumps(_finite(value), indent=2, allow_nan=False,
                      default=lambda v: v.item() if hasattr(v, "item") else str(v)) + "\n"


def missing_dirs(outdir, names=()) -> list:
    """The folders ``Path(outdir).mkdir(parents=True)`` would create, deepest first.

    ``names``: output files the command will write; one that exists as a
    folder is refused too.

    Raises
    ------
    InputError
        Before any work, if ``outdir`` cannot be made or written to.
    """
    outdir = Path(outdir)
    if str(outdir) == "":
        raise InputError("the output folder is empty; give a folder name with -o")
    if outdir.exists():
        if not outdir.is_dir():
            raise InputError(f"output '{_show(outdir)}' exists and is not a directory; choose another -o")
        if not os.access(outdir, os.W_OK | os.X_OK):
            raise InputError(f"output directory '{_show(outdir)}' is not writable; choose another -o")
        for name in names:
            if (outdir / name).is_dir():
                raise InputError(f"'{_show(outdir / name)}' is a directory; remove it or choose another -o")
        return []
    missing = [outdir]
    anc = outdir.absolute().parent
    while not anc.exists() and anc != anc.parent:
        missing.append(anc)
        anc = anc.parent
    if not anc.is_dir():
        raise InputError(f"cannot create output directory '{_show(outdir)}': '{_show(anc)}' is not a directory; "
                         f"choose another -o")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(f"cannot create output directory '{_show(outdir)}': '{_show(anc)}' is not writable; "
                         f"choose another -o")
    return missing


@contextmanager
def _signals_held():
    """Hold SIGINT and SIGTERM back (delivered on exit) in the main thread."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "pthread_sigmask"):
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


#: Characters of the output folder's name in its staging folder's name: a
#: name the file system accepts (255 bytes) must leave room for the rest.
STAGE_NAME_CHARS = 50


def _stage_prefix(outdir: Path) -> str:
    return f".{outdir.name[:STAGE_NAME_CHARS]}.swcuts-stage-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process, or not a pid: leave it
    return True


def _remove_stale_stages(outdir: Path) -> None:
    """Remove the staging folders of ``outdir`` left by runs that were
    killed (SIGKILL, a power cut) while writing: their process is gone."""
    prefix = _stage_prefix(outdir)
    try:
        entries = list(outdir.absolute().parent.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        pid = entry.name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def write_output_set(outdir, files: Sequence[tuple[str, Callable[[Path], object]]]) -> list:
    """Write ``files`` into ``outdir`` as one unit.

    Parameters
    ----------
    outdir : str or Path
        The output folder (created, with its missing parents, if needed).
    files : sequence of (name, writer)
        ``writer(path)`` writes the file ``name`` at ``path``.

    Returns
    -------
    list of Path
        The files in place.

    Raises
    ------
    InputError
        If a file cannot be written (the message names the reason, e.g.
        "No space left on device"); nothing in ``outdir`` has changed then.
    """
    outdir = Path(outdir)
    names = [name for name, _ in files]
    missing = missing_dirs(outdir, names)
    created = []
    stage = None
    try:
        for d in reversed(missing[1:]):
            d.mkdir()
            created.append(d)
        _remove_stale_stages(outdir)
        stage = outdir.absolute().parent / f"{_stage_prefix(outdir)}{os.getpid()}-{secrets.token_hex(6)}"
        stage.mkdir()
        for name, writer in files:
            writer(stage / name)
        with _signals_held():
            if not outdir.exists():
                os.rename(stage, outdir)
                stage = None
            else:
                for name in names:
                    os.replace(stage / name, outdir / name)
        return [outdir / name for name in names]
    except OSError as exc:
        # numpy's "N requested and M written" (no errno) is a full disk.
        reason = os.strerror(errno.ENOSPC) if _short_write(exc) else exc.strerror or exc
        raise InputError(f"cannot write the output files in '{_show(outdir)}': {reason}") from None
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        if not outdir.exists():
            for d in reversed(created):
                try:
                    d.rmdir()
                except OSError:
                    break
