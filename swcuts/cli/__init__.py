"""The ``swcuts`` console script: loads the command line, then runs it.

This module imports nothing heavy itself, so that an interrupt (Ctrl-C)
while numpy, numba and the kernels load ends with one line and exit
status 130, as one during a run does.
"""

import gc
import sys
import time

#: Thresholds of Python's cyclic garbage collector while a command runs
#: (Python's own: 700, 10, 10). Loading numpy, numba and scipy and, on a
#: first run, compiling the kernels allocate millions of objects that
#: live on; with the default thresholds the collector walks them again and
#: again. These made a first ``swcuts segment`` (empty numba cache) 0.7 to
#: 1.1 CPU s cheaper (7.4-7.8 -> 6.6-6.8 CPU s) and a warm one about
#: 0.07 s, for some more memory held by garbage between collections.
GC_THRESHOLDS = (50_000, 20, 100)


def main(argv=None) -> int:
    """Entry point of the ``swcuts`` console script."""
    from swcuts.inference.budget import mark_process_start

    mark_process_start(time.perf_counter())  # --time-budget counts from here
    previous = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        from swcuts.cli.app import main as run

        return run(argv)
    except KeyboardInterrupt:
        print("swcuts: interrupted", file=sys.stderr)
        return 130
    finally:
        gc.set_threshold(*previous)
        mark_process_start(None)
