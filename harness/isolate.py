"""The parent side of isolation: a kernel's worker process with a timeout on every call.

A call that outlives its timeout kills the worker (``TimeoutError``); a worker that dies
(segfault, ``os._exit``, CUDA abort) raises :class:`WorkerDied`. Either way the caller records
the outcome against the kernel and starts a fresh worker for the next problem.
"""

from __future__ import annotations

import multiprocessing as mp
import signal
from typing import Any

from harness.protocol import KernelSpec
from harness.worker import serve

__all__ = ["Worker", "WorkerDied"]


class WorkerDied(RuntimeError):
    """The worker process exited while a call was in flight."""


def _describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Worker:
    """One spawned process serving one kernel (or, with ``spec=None``, device queries)."""

    def __init__(self, spec: KernelSpec | None, device: str = "cuda") -> None:
        self.spec = spec
        self.device = device
        self._proc: mp.process.BaseProcess | None = None
        self._conn: Any = None
        self._ready = False

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.is_alive()

    def start(self) -> None:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe()
        self._proc = ctx.Process(target=serve, args=(child, self.spec, self.device), daemon=True)
        self._proc.start()
        child.close()
        self._conn = parent
        self._ready = False

    def _recv(self, timeout: float, what: str) -> Any:
        assert self._proc is not None
        if not self._conn.poll(timeout):
            self.kill()
            raise TimeoutError(f"{what} did not finish within {timeout:g} s")
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            self._proc.join(timeout=5)
            code = self._proc.exitcode
            self.kill()
            raise WorkerDied(
                f"worker process died during {what} ({_describe_exit(code)})"
            ) from None

    def call(self, cmd: dict[str, Any], timeout: float, startup_timeout: float = 300.0) -> Any:
        """Send ``cmd`` and wait for the answer; start the worker first if needed."""
        if not self.alive:
            self.start()
        if not self._ready:
            self._recv(startup_timeout, "worker start-up")
            self._ready = True
        try:
            self._conn.send(cmd)
        except (BrokenPipeError, OSError):
            self.kill()
            raise WorkerDied(f"worker process died before {cmd.get('op')}") from None
        return self._recv(timeout, str(cmd.get("op")))

    def kill(self) -> None:
        if self._proc is not None and self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout=10)
        if self._conn is not None:
            self._conn.close()
        self._proc, self._conn, self._ready = None, None, False

    def stop(self) -> None:
        if self.alive:
            try:
                self._conn.send({"op": "exit"})
                self._proc.join(timeout=5)  # type: ignore[union-attr]
            except (BrokenPipeError, OSError):
                pass
        self.kill()
