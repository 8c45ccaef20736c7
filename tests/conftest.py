import os
import sys

sys.path.insert(0, os.path.dirname(__file__))

# One BLAS/OpenMP thread per test process (and the subprocesses tests start):
# the tests' arrays are small, and with two pytest-xdist workers on two cores
# a second OpenBLAS thread per worker only spins. On a busy two-core machine
# slic-ncut's eigen-solver took 45 s with two threads and 4.6 s with one.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
from threadpoolctl import threadpool_limits  # noqa: E402

threadpool_limits(limits=1)  # for a library a plugin loaded before this file

# numba's cache files are locked by swcuts itself (swcuts/_numba/cache.py), so
# the pytest-xdist workers share one cache safely.
