"""Third-party noise stays out of the output, and comes back with GEMM_STUDY_VERBOSE=1: the
resource tracker's report of a lock a worker's DSL left behind, torch's missing-NumPy note."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A spawned child takes a multiprocessing lock and ends with os._exit, as a worker whose DSL
# took one does; the parent calls quiet_resource_tracker first when told to.
LEAK = textwrap.dedent(
    """
    import multiprocessing as mp, os, sys
    def child():
        global keep
        keep = mp.get_context("spawn").Semaphore()
        os._exit(0)
    if __name__ == "__main__":
        if sys.argv[1] == "quiet":
            from harness.quiet import quiet_resource_tracker
            quiet_resource_tracker()
        p = mp.get_context("spawn").Process(target=child)
        p.start()
        p.join()
    """
)


@pytest.mark.parametrize(("mode", "verbose", "reported"), [("loud", "", True), ("quiet", "", False),
                                                          ("quiet", "1", True)])  # fmt: skip
def test_leaked_lock_report(tmp_path: Path, mode: str, verbose: str, reported: bool) -> None:
    script = tmp_path / "leak.py"
    script.write_text(LEAK)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONWARNINGS"}
    env.update(PYTHONPATH=str(ROOT), GEMM_STUDY_VERBOSE=verbose)
    r = subprocess.run(
        [sys.executable, str(script), mode], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert ("leaked semaphore" in r.stderr) is reported, r.stderr


def test_torch_without_numpy_is_quiet_in_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from harness.quiet import quiet_third_party

    monkeypatch.delenv("GEMM_STUDY_VERBOSE", raising=False)
    monkeypatch.delenv("TQDM_DISABLE", raising=False)  # restored after the test

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_third_party()
        warnings.warn(
            "Failed to initialize NumPy: No module named 'numpy'", UserWarning, stacklevel=1
        )
        warnings.warn("something else", UserWarning, stacklevel=1)
    assert [str(w.message) for w in seen] == ["something else"]
