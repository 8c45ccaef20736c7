"""The ``swcuts`` console script: loads the command line, then runs it.

This module imports nothing heavy itself, so that an interrupt (Ctrl-C)
while numpy, numba and the kernels load ends with one line and exit
status 130, as one during a run does.
"""

import sys


def main(argv=None) -> int:
    """Entry point of the ``swcuts`` console script."""
    try:
        from .cli import main as run

        return run(argv)
    except KeyboardInterrupt:
        print("swcuts: interrupted", file=sys.stderr)
        return 130
