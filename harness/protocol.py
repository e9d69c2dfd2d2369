"""The contract between the harness and every backend.

A backend imports this module (and its own DSL) and nothing else from the harness. It
describes its kernels with :class:`KernelSpec` values, which name a module to import lazily,
so that listing kernels never imports a DSL. The module's attribute (``KERNEL`` by default) is
an object implementing :class:`Kernel`.

The GEMM is the seeds' "TN" convention: ``A`` is (M, K) row-major, ``B`` is (N, K) row-major and
``D = A @ B.T`` is (M, N) row-major, fp16 or bf16 in and out, fp32 accumulation.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "ARCHES",
    "DTYPES",
    "ENTRY_POINT_GROUP",
    "Artifacts",
    "Kernel",
    "KernelSpec",
    "LaunchFn",
    "Problem",
    "Rung",
    "element_size",
]

#: Entry-point group through which an installed package contributes kernels. Each entry point
#: names a zero-argument callable returning an iterable of :class:`KernelSpec`.
ENTRY_POINT_GROUP = "gemm_dsl_study.backends"

DTYPES = ("fp16", "bf16")

#: Targets a kernel may declare. "any" is for library kernels (the cuBLAS reference) that run
#: on whatever GPU is present.
ARCHES = ("sm_90a", "sm_100a", "any")

#: Compute capability each arch needs to *run* (compiling needs none).
ARCH_CAPABILITY: Mapping[str, tuple[int, int] | None] = {
    "sm_90a": (9, 0),
    "sm_100a": (10, 0),
    "any": None,
}


class Rung(enum.IntEnum):
    """The speedup chain: each rung changes one thing from the one before (DESIGN.md)."""

    CUBLAS = 0
    TILED = 1
    TMA = 2
    PIPELINED = 3
    PERSISTENT = 4
    WARP_SPECIALIZED = 5
    CLUSTER2 = 6
    MULTI_CONSUMER = 7

    @property
    def label(self) -> str:
        """The rung's name as used in results and plots, e.g. ``warp_specialized``."""
        return self.name.lower()

    @classmethod
    def parse(cls, value: str | int) -> Rung:
        """Accept ``5``, ``"5"`` or ``"warp_specialized"``."""
        if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
            return cls(int(value))
        try:
            return cls[str(value).upper()]
        except KeyError:
            names = ", ".join(r.label for r in cls)
            raise ValueError(f"unknown rung {value!r}; expected 0-7 or one of: {names}") from None


def element_size(dtype: str) -> int:
    """Bytes per element of a problem dtype."""
    if dtype not in DTYPES:
        raise ValueError(f"unsupported dtype {dtype!r}; expected one of {DTYPES}")
    return 2


@dataclass(frozen=True, order=True)
class Problem:
    """One GEMM: ``D[M, N] = A[M, K] @ B[N, K].T`` in ``dtype`` with fp32 accumulation."""

    m: int
    n: int
    k: int
    dtype: str = "fp16"

    def __post_init__(self) -> None:
        for name in ("m", "n", "k"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"Problem.{name} must be a positive int, got {value!r}")
        element_size(self.dtype)  # validates dtype

    @property
    def flops(self) -> int:
        return 2 * self.m * self.n * self.k

    @property
    def key(self) -> str:
        """Stable text id, e.g. ``4096x4096x4096-fp16``."""
        return f"{self.m}x{self.n}x{self.k}-{self.dtype}"

    @classmethod
    def parse(cls, key: str) -> Problem:
        """Inverse of :attr:`key`; the dtype suffix is optional (fp16)."""
        shape, _, dtype = key.partition("-")
        try:
            m, n, k = (int(x) for x in shape.lower().split("x"))
        except ValueError:
            raise ValueError(f"bad problem {key!r}; expected MxNxK[-fp16|-bf16]") from None
        return cls(m, n, k, dtype or "fp16")

    def bytes_per_set(self) -> int:
        """Bytes of one (A, B, D) input/output set."""
        return element_size(self.dtype) * (self.m * self.k + self.n * self.k + self.m * self.n)


#: What :meth:`Kernel.compile` returns: launches ``out = a @ b.T`` on the current CUDA stream.
#: It must not synchronize, allocate large buffers or compile: timing sees only this call.
LaunchFn = Callable[[Any, Any, Any], None]


@dataclass(frozen=True)
class Artifacts:
    """What a compile without a GPU produced, for the codegen table.

    Fields a DSL cannot provide stay ``None``; the harness fills ``registers``/``spill_bytes``/
    ``shared_bytes`` from ``ptxas -v`` on ``ptx`` when a backend leaves them out.
    """

    arch: str
    ptx: str | None = None
    cubin: bytes | None = None
    registers: int | None = None
    spill_bytes: int | None = None
    shared_bytes: int | None = None
    compile_seconds: float | None = None
    #: Hardware features (e.g. "setmaxnreg", "tma_multicast") the kernel reached only through
    #: inline/raw PTX rather than the DSL's own API: a finding of the study.
    raw_ptx: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@runtime_checkable
class Kernel(Protocol):
    """One kernel of one backend at one rung for one target arch."""

    backend: str
    name: str
    rung: Rung
    arch: str
    description: str

    def supports(self, problem: Problem) -> str | None:
        """``None`` if this kernel can run ``problem``, else a one-line reason."""
        ...

    def compile(self, problem: Problem) -> LaunchFn:
        """Do everything slow (JIT, descriptors, config choice); return the launch function.

        Implementations cache by problem so repeated calls never recompile.
        """
        ...

    def codegen(self, problem: Problem, arch: str) -> Artifacts:
        """Compile for ``arch`` without needing a GPU and return what came out."""
        ...


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _pin_problem(pin: str) -> str | None:
    """None if the installed distribution satisfies ``name==v`` / ``name>=v``, else why not."""
    import importlib.metadata

    for op in ("==", ">="):
        if op in pin:
            name, want = (x.strip() for x in pin.split(op, 1))
            break
    else:
        raise ValueError(f"pin {pin!r} must be 'name==version' or 'name>=version'")
    try:
        have = importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return pin
    ok = (
        (_version_tuple(have) == _version_tuple(want))
        if op == "=="
        else (_version_tuple(have) >= _version_tuple(want))
    )
    return None if ok else f"{pin} (found {have})"


@dataclass(frozen=True)
class KernelSpec:
    """A kernel's identity plus where to find it, importable without its DSL.

    ``requires`` lists the Python modules the kernel needs (e.g. ``("cutlass",)``), so that
    ``python -m harness list`` can say why a kernel cannot run here without importing it.
    ``pins`` lists distribution versions the kernel is written for (``"triton==3.9.0"``,
    ``"nvidia-cutlass-dsl>=4.8"``): a different installed version is reported as a reason too.
    ``devices`` names where its launch function runs: ``("cuda",)`` for every real kernel;
    test-only kernels may run on ``"cpu"``.
    """

    backend: str
    name: str
    rung: Rung
    arch: str
    description: str
    module: str
    attr: str = "KERNEL"
    requires: tuple[str, ...] = ()
    pins: tuple[str, ...] = ()
    devices: tuple[str, ...] = ("cuda",)
    extra: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.arch not in ARCHES:
            raise ValueError(f"{self.backend}/{self.name}: arch {self.arch!r} not in {ARCHES}")
        if "/" in self.backend:
            raise ValueError(f"backend name {self.backend!r} must not contain '/'")

    @property
    def id(self) -> str:
        """``backend/name``, e.g. ``gluon/sm90/r5_warp_specialized`` (results, tests, plots)."""
        return f"{self.backend}/{self.name}"

    def missing_requirements(self) -> list[str]:
        """Modules in ``requires`` not importable here and ``pins`` not met (nothing imported)."""
        missing = []
        for mod in self.requires:
            try:
                found = importlib.util.find_spec(mod) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.append(mod)
        for pin in self.pins:
            problem = _pin_problem(pin)
            if problem:
                missing.append(problem)
        return missing

    def load(self) -> Kernel:
        """Import the kernel's module and return its :class:`Kernel`, checking identity."""
        obj = getattr(importlib.import_module(self.module), self.attr)
        kernel = obj() if isinstance(obj, type) else obj
        if not isinstance(kernel, Kernel):
            raise TypeError(f"{self.module}.{self.attr} does not implement harness.protocol.Kernel")
        for attr in ("backend", "name", "arch"):
            if getattr(kernel, attr) != getattr(self, attr):
                raise TypeError(
                    f"{self.id}: spec says {attr}={getattr(self, attr)!r} but the kernel says "
                    f"{getattr(kernel, attr)!r}"
                )
        if Rung(kernel.rung) != self.rung:
            raise TypeError(f"{self.id}: spec rung {self.rung.label} != kernel rung {kernel.rung}")
        return kernel
