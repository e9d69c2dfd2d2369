"""Keep third-party noise out of the harness's progress output.

DSL stacks print pages that say nothing about the kernels being measured: deprecation warnings
from their own internals at import, torch's "Failed to initialize NumPy" where NumPy is not
installed (a CPU plugin's environment needs none), progress bars of their own builds (Tilus's
tqdm), leak reports from nanobind-bound extensions at interpreter exit (workers end with
``os._exit``, see :mod:`harness.worker`; pytest runs end the same way, see
``tests/conftest.py``), and the profiler's C++ log of each start and stop
(:func:`quiet_stderr`). Set ``GEMM_STUDY_VERBOSE=1`` to see all of it again.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator

__all__ = ["quiet_resource_tracker", "quiet_stderr", "quiet_third_party", "verbose"]


def verbose() -> bool:
    """True when ``GEMM_STUDY_VERBOSE`` asks for third-party output."""
    return os.environ.get("GEMM_STUDY_VERBOSE", "") not in ("", "0")


def quiet_third_party() -> None:
    """Silence deprecation warnings in this process (unless verbose)."""
    if verbose():
        return
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
    warnings.filterwarnings("ignore", category=FutureWarning)
    # torch without NumPy says so at its first tensor; nothing here needs NumPy (CPU plugins).
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    # tqdm reads this when a bar is created: DSLs that report build progress stay silent.
    os.environ.setdefault("TQDM_DISABLE", "1")


#: The multiprocessing resource tracker's report of what a worker left registered.
_TRACKER_RULE = "ignore:resource_tracker:UserWarning"


def quiet_resource_tracker() -> None:
    """Hide the resource tracker's "leaked semaphore objects" report (unless verbose).

    A DSL that takes a multiprocessing lock in a worker (Tilus does) leaves it registered when
    the worker ends with ``os._exit``; the tracker, a process of its own started with the first
    worker, removes it at shutdown anyway and says so on stderr. The filter goes into
    ``PYTHONWARNINGS``, which the tracker inherits: call this before the first worker starts."""
    if verbose():
        return
    current = os.environ.get("PYTHONWARNINGS", "")
    if _TRACKER_RULE not in current.split(","):
        os.environ["PYTHONWARNINGS"] = ",".join(filter(None, [current, _TRACKER_RULE]))


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Send what this process writes to its stderr (file descriptor 2, so C++ too) to the null
    device for the block (unless verbose). torch's profiler logs "profiler_start" and
    "profiler_stop" lines there from C++ (kineto) at every profile; an exception still
    propagates and is reported by whoever catches it."""
    if verbose():
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
