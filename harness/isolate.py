"""The parent side of isolation: a kernel's worker process with a timeout on every call.

A worker is a plain subprocess, ``python -c "from harness.worker import main; main()" FD``,
talking to the parent over a socket pair (``FD`` is its end). Being a subprocess rather than a
``multiprocessing`` child, it can run under another interpreter and environment than the
harness's own — a backend's virtualenv, or the same Python with another ``PYTHONPATH``
(:class:`WorkerEnv`), because the DSL stacks conflict (Tilus and TIRx pin different
``apache-tvm-ffi`` releases) — and on one GPU of several (``CUDA_VISIBLE_DEVICES``). The harness
package the worker imports is always the parent's (its folder leads ``PYTHONPATH``), so both
sides speak the same protocol. A worker in the harness's own environment also gets the parent's
``sys.path``, as a spawned ``multiprocessing`` child would.

A call that outlives its timeout kills the worker (``TimeoutError``); a worker that dies
(segfault, ``os._exit``, CUDA abort) or cannot start raises :class:`WorkerDied`. Either way the
caller records the outcome against the kernel and starts a fresh worker for the next call.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.protocol import KernelSpec

__all__ = ["Worker", "WorkerDied", "WorkerEnv", "parse_worker_envs"]

#: The folder holding the ``harness`` package the parent runs: a worker imports the same code.
HARNESS_ROOT = Path(__file__).resolve().parent.parent


class WorkerDied(RuntimeError):
    """The worker process exited while a call was in flight, or could not start."""


@dataclass(frozen=True)
class WorkerEnv:
    """Where a backend's workers run: an interpreter (None: the harness's own) and environment
    variables set for them (``PYTHONPATH`` included: it replaces the inherited one)."""

    python: str | None = None
    variables: tuple[tuple[str, str], ...] = ()

    @property
    def own(self) -> bool:
        """The harness's own interpreter and environment, unchanged."""
        return self.python is None and not self.variables

    @property
    def executable(self) -> str:
        return self.python or sys.executable

    def describe(self) -> str:
        """One line: the interpreter and the variables set, e.g. for logs and results."""
        parts = [self.executable]
        parts += [f"{k}={v}" for k, v in self.variables]
        return " ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"python": self.executable, "variables": dict(self.variables)}

    def environ(
        self, visible: str | None = None, base: Mapping[str, str] = os.environ
    ) -> dict[str, str]:
        """The environment of a worker: ``base`` with this env's variables, the harness's folder
        first on ``PYTHONPATH``, a virtualenv interpreter's ``bin`` first on ``PATH`` (its tools,
        as if activated) and, with ``visible``, ``CUDA_VISIBLE_DEVICES`` (numbered in PCI bus
        order, as nvidia-smi numbers GPUs, unless ``CUDA_DEVICE_ORDER`` says otherwise)."""
        env = dict(base)
        env.update(self.variables)
        path = [str(HARNESS_ROOT), *(p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p)]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(path))
        if self.python is not None:
            bindir = Path(self.python).parent
            if (bindir / "activate").is_file():  # a virtualenv's interpreter
                env["VIRTUAL_ENV"] = str(bindir.parent)
                env["PATH"] = os.pathsep.join([str(bindir), env.get("PATH", "")])
        if visible is not None:
            env["CUDA_VISIBLE_DEVICES"] = visible
            env.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
        return env


def parse_worker_envs(
    pythons: Iterable[str], variables: Iterable[str], backends: Sequence[str]
) -> dict[str, WorkerEnv]:
    """backend -> :class:`WorkerEnv` from ``--python BACKEND=PATH`` and ``--env
    BACKEND:VAR=VALUE`` options; ValueError naming the first bad one."""
    known = ", ".join(backends)
    found: dict[str, str] = {}
    for item in pythons:
        backend, sep, path = item.partition("=")
        if not sep or not backend or not path:
            raise ValueError(f"--python {item!r}: expected BACKEND=PATH, e.g. tirx=/v/bin/python")
        if backend not in backends:
            raise ValueError(f"--python {item!r}: unknown backend {backend!r}; known: {known}")
        if backend in found:
            raise ValueError(f"--python names {backend!r} twice")
        if not (Path(path).is_file() and os.access(path, os.X_OK)):
            raise ValueError(f"--python {item!r}: {path} is not an executable interpreter")
        found[backend] = path
    sets: dict[str, dict[str, str]] = {}
    for item in variables:
        backend, sep, assignment = item.partition(":")
        name, eq, value = assignment.partition("=")
        if not sep or not eq or not backend or not name.isidentifier():
            raise ValueError(
                f"--env {item!r}: expected BACKEND:VAR=VALUE, e.g. tirx:PYTHONPATH=/opt/tirx"
            )
        if backend not in backends:
            raise ValueError(f"--env {item!r}: unknown backend {backend!r}; known: {known}")
        sets.setdefault(backend, {})[name] = value
    return {
        b: WorkerEnv(found.get(b), tuple(sorted(sets.get(b, {}).items())))
        for b in dict.fromkeys([*found, *sets])
    }


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
    """One worker process serving one kernel (or, with ``spec=None``, device queries), under
    ``env`` and, with ``visible``, on that GPU (``CUDA_VISIBLE_DEVICES``)."""

    def __init__(
        self,
        spec: KernelSpec | None,
        device: str = "cuda",
        env: WorkerEnv | None = None,
        visible: str | None = None,
    ) -> None:
        self.spec = spec
        self.device = device
        self.env = env or WorkerEnv()
        self.visible = visible
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Any = None
        self._ready = False

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        parent, child = mp.Pipe()
        fd = child.fileno()
        cmd = [self.env.executable, "-c", "from harness.worker import main; main()", str(fd)]
        try:
            self._proc = subprocess.Popen(
                cmd, pass_fds=(fd,), env=self.env.environ(self.visible), stdin=subprocess.DEVNULL
            )
        except OSError as e:
            parent.close()
            raise WorkerDied(f"worker could not start under {self.env.executable}: {e}") from None
        finally:
            child.close()
        self._conn = parent
        self._ready = False
        # What a spawned multiprocessing child would inherit: the parent's import path, unless
        # the worker runs in an environment of its own.
        parent.send(list(sys.path) if self.env.own else None)
        parent.send({"spec": self.spec, "device": self.device})

    def _recv(self, timeout: float, what: str) -> Any:
        assert self._proc is not None
        if not self._conn.poll(timeout):
            self.kill()
            raise TimeoutError(f"{what} did not finish within {timeout:g} s")
        try:
            return self._conn.recv()
        except (EOFError, OSError):
            try:
                code = self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
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
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self._conn is not None:
            self._conn.close()
        self._proc, self._conn, self._ready = None, None, False

    def stop(self) -> None:
        if self.alive:
            try:
                self._conn.send({"op": "exit"})
                self._proc.wait(timeout=5)  # type: ignore[union-attr]
            except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
