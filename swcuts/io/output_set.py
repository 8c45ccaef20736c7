"""Writing a command's output files as one unit.

Every file of a run is written into a hidden staging folder on the output
folder's own file system (inside the output folder if it exists, beside
it if the run creates it); only when all of them are complete are they
moved into place (one ``os.replace`` each, or one ``os.rename`` of the
whole folder). A run that fails or is interrupted before that leaves the
output folder exactly as it was: an earlier run's files intact, no
temporary files, no folder it created. SIGINT and SIGTERM are deferred
while the files are rendered and written (:func:`signals_deferred`):
they end the run between two files, never inside an image writer. A run
killed outright (SIGKILL) cannot clean up; its staging folder names its
process, and the next run into the same folder removes it.

No output may be one of the run's inputs (:func:`refuse_inputs`): a run
whose output file would replace an input file (the same path, a symbolic
link to it or a hard link of it) is refused before any work.
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import shutil
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Sequence

from swcuts.io.errors import InputError, show_path
from swcuts.io.image_write import _short_write

__all__ = ["write_output_set", "missing_dirs", "refuse_inputs", "signals_deferred", "check_signals",
           "json_text"]


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


def refuse_inputs(outdir, names: Iterable[str], inputs: Iterable = ()) -> None:
    """Refuse outputs that are inputs of the same run.

    An output ``outdir / name`` that exists and is the same file as one of
    ``inputs`` (:func:`os.path.samefile`: the same path however spelled,
    a symbolic link either way, a hard link) would be overwritten by the
    run: the user's file would be lost.

    Parameters
    ----------
    outdir : str or Path
        The output folder (need not exist).
    names : iterable of str
        The files the run will write in ``outdir`` (relative paths).
    inputs : iterable of str or Path
        The files the run reads; one that does not exist is skipped (it is
        reported where it is read).

    Raises
    ------
    InputError
        Naming the input and the output, before any work.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> (folder / "overlay.png").write_bytes(b"a photo")
    7
    >>> refuse_inputs(folder, ["overlay.png"], [folder / "overlay.png"])
    Traceback (most recent call last):
    ...
    swcuts.io.errors.InputError: input '...overlay.png' is also an output of this run ...
    >>> refuse_inputs(folder, ["labels.png"], [folder / "overlay.png"])
    """
    ids = {}
    for path in inputs:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            continue
        ids.setdefault((st.st_dev, st.st_ino), path)
    if not ids:
        return
    outdir = Path(outdir)
    for name in names:
        target = outdir / name
        try:
            st = os.stat(target)
        except (OSError, ValueError):
            continue  # not there yet (or not reachable): nothing to overwrite
        source = ids.get((st.st_dev, st.st_ino))
        if source is None:
            continue
        if os.path.abspath(source) == os.path.abspath(target):
            raise InputError(f"input '{show_path(source)}' is also an output of this run and would be "
                             f"overwritten; choose another -o")
        raise InputError(f"output '{show_path(target)}' is the input '{show_path(source)}' (the same file) and "
                         f"would overwrite it; choose another -o")


def missing_dirs(outdir, names=(), inputs=()) -> list:
    """The folders ``Path(outdir).mkdir(parents=True)`` would create, deepest first.

    Parameters
    ----------
    outdir : str or Path
        The output folder.
    names : iterable of str
        Output files the command will write; one that exists as a folder
        is refused too.
    inputs : iterable of str or Path
        The command's input files: an output that is one of them is
        refused (:func:`refuse_inputs`).

    Returns
    -------
    list of Path
        Empty if ``outdir`` exists.

    Raises
    ------
    InputError
        Before any work, if ``outdir`` cannot be made or written to, or an
        output would overwrite an input.
    """
    outdir = Path(outdir)
    if str(outdir) == "":
        raise InputError("the output folder is empty; give a folder name with -o")
    if outdir.exists():
        if not outdir.is_dir():
            raise InputError(f"output '{show_path(outdir)}' exists and is not a directory; choose another -o")
        if not os.access(outdir, os.W_OK | os.X_OK):
            raise InputError(f"output directory '{show_path(outdir)}' is not writable; choose another -o")
        for name in names:
            if (outdir / name).is_dir():
                raise InputError(f"'{show_path(outdir / name)}' is a directory; remove it or choose another -o")
        refuse_inputs(outdir, names, inputs)
        return []
    missing = [outdir]
    anc = outdir.absolute().parent
    while not anc.exists() and anc != anc.parent:
        missing.append(anc)
        anc = anc.parent
    if not anc.is_dir():
        raise InputError(f"cannot create output directory '{show_path(outdir)}': '{show_path(anc)}' is not a directory; "
                         f"choose another -o")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise InputError(f"cannot create output directory '{show_path(outdir)}': '{show_path(anc)}' is not writable; "
                         f"choose another -o")
    return missing


# ---------------------------------------------------------------------------
# Signals while the files are rendered and written
# ---------------------------------------------------------------------------

#: The signals deferred while outputs are written (those that exist here).
DEFERRED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM") if hasattr(signal, name))


class _Deferral:
    """The signals received while deferred, and the handlers they await."""

    def __init__(self):
        self.pending = []
        self.handlers = {}

    def record(self, signum, frame):
        self.pending.append(signum)


class _Signalled(BaseException):
    """A deferred signal whose handler is the system's default (the
    process ends): raised to remove the staged files first."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


_active: _Deferral | None = None


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def signals_deferred():
    """Defer SIGINT and SIGTERM to the points where :func:`check_signals`
    is called (and to the end of the block).

    A signal that arrives while images are encoded would otherwise raise
    inside the encoder (a half-built writer object, an error from its
    clean-up instead of the interrupt); deferred, it ends the run between
    two files. At :func:`check_signals`, or when the block ends, the
    signal's own handler runs: with swcuts' command line that raises (exit
    130 or 143); with the system's default handler the block is left by an
    exception first (so that ``finally`` clauses remove staged files) and
    the signal is then delivered again. A signal that is ignored stays
    ignored. Only the main thread receives signals: elsewhere, and inside
    another such block, this does nothing.

    Examples
    --------
    >>> with signals_deferred():
    ...     check_signals()  # nothing pending: returns
    """
    global _active
    if _active is not None or not _in_main_thread():
        yield
        return
    deferral = _Deferral()
    for sig in DEFERRED:
        handler = signal.getsignal(sig)
        if handler not in (signal.SIG_IGN, None):
            deferral.handlers[sig] = signal.signal(sig, deferral.record)
    _active = deferral
    signalled = None
    try:
        yield
    except _Signalled as exc:
        signalled = exc.signum
    finally:
        _active = None
        for sig, handler in deferral.handlers.items():
            signal.signal(sig, handler)
        if signalled is None:  # a signal that came late, or with another failure: it wins
            _deliver(deferral, deferral.pending)
    if signalled is not None:
        signal.raise_signal(signalled)  # the default action: the process ends
        raise KeyboardInterrupt  # only if the handler was changed meanwhile


def check_signals() -> None:
    """Run the handler of a signal deferred by :func:`signals_deferred` (a
    point where ending the run is safe); nothing if none is pending."""
    deferral = _active
    if deferral is None or not deferral.pending or not _in_main_thread():
        return
    pending, deferral.pending = deferral.pending, []
    _deliver(deferral, pending)


def _deliver(deferral: _Deferral, pending) -> None:
    for signum in pending:
        handler = deferral.handlers.get(signum)
        if callable(handler):
            handler(signum, sys._getframe(1))  # swcuts' handlers raise: the run ends here
        elif handler is not None and handler != signal.SIG_IGN:
            if _active is deferral:
                raise _Signalled(signum)
            signal.raise_signal(signum)


# ---------------------------------------------------------------------------
# Staging
# ---------------------------------------------------------------------------

#: Characters of the output folder's name in its staging folder's name: a
#: name the file system accepts (255 bytes) must leave room for the rest.
STAGE_NAME_CHARS = 50
#: The staging folder's name inside an existing output folder.
INSIDE_PREFIX = ".swcuts-stage-"


def _stage_prefix(outdir: Path) -> str:
    """The name of a staging folder beside ``outdir`` (a folder it creates)."""
    return f".{outdir.name[:STAGE_NAME_CHARS]}.swcuts-stage-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return True  # another user's process, or not a pid: leave it
    return True


def _remove_stale_stages(folder: Path, prefix: str) -> None:
    """Remove the staging folders in ``folder`` left by runs that were
    killed (SIGKILL, a power cut) while writing: their process is gone."""
    try:
        entries = list(folder.iterdir())
    except OSError:
        return
    for entry in entries:
        if not entry.name.startswith(prefix):
            continue
        pid = entry.name[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(entry, ignore_errors=True)


def write_output_set(outdir, files: Sequence[tuple[str, Callable[[Path], object]]], inputs=()) -> list:
    """Write ``files`` into ``outdir`` as one unit.

    The files are written into a staging folder on the file system of the
    output folder as it resolves (through symbolic links, onto a mount
    point), so that the moves into place are atomic renames; SIGINT and
    SIGTERM end the writing between two files (:func:`signals_deferred`).

    Parameters
    ----------
    outdir : str or Path
        The output folder (created, with its missing parents, if needed).
    files : sequence of (name, writer)
        ``writer(path)`` writes the file ``name`` at ``path``.
    inputs : iterable of str or Path
        The files the run read: an output that is one of them is refused
        (:func:`refuse_inputs`) before anything is written.

    Returns
    -------
    list of Path
        The files in place.

    Raises
    ------
    InputError
        If a file cannot be written (the message names the reason, e.g.
        "No space left on device"), or an output is an input; nothing in
        ``outdir`` has changed then.
    """
    outdir = Path(outdir)
    names = [name for name, _ in files]
    missing = missing_dirs(outdir, names, inputs)
    created = []
    stage = None
    with signals_deferred():
        try:
            check_signals()
            for d in reversed(missing[1:]):
                d.mkdir()
                created.append(d)
            if missing:  # a new folder: staged beside it, then renamed whole
                home = Path(os.path.realpath(outdir.parent))
                prefix = _stage_prefix(outdir)
            else:  # staged inside the folder it resolves to: the same file system
                home = Path(os.path.realpath(outdir))
                prefix = INSIDE_PREFIX
                _remove_stale_stages(home.parent, _stage_prefix(outdir))  # of earlier versions
            _remove_stale_stages(home, prefix)
            stage = home / f"{prefix}{os.getpid()}-{secrets.token_hex(6)}"
            stage.mkdir()
            for name, writer in files:
                check_signals()
                writer(stage / name)
            check_signals()
            if missing:
                os.rename(stage, home / outdir.name)
                stage = None
            else:
                for name in names:
                    os.replace(stage / name, home / name)
            return [outdir / name for name in names]
        except OSError as exc:
            # numpy's "N requested and M written" (no errno) is a full disk.
            reason = os.strerror(errno.ENOSPC) if _short_write(exc) else exc.strerror or exc
            raise InputError(f"cannot write the output files in '{show_path(outdir)}': {reason}") from None
        finally:
            if stage is not None:
                shutil.rmtree(stage, ignore_errors=True)
            if not outdir.exists():
                for d in reversed(created):
                    try:
                        d.rmdir()
                    except OSError:
                        break
