"""The contract between the harness and every backend.

A backend imports this module, its own DSL, the CUDA toolchain helpers of
:mod:`harness.toolchain` (nvcc, ptxas, the SM count assumed without a GPU) and, for a
shape-adaptive rung, the shared vocabulary, schedule and cost model of :mod:`harness.tile_cost` —
nothing else from the harness. It describes its kernels with :class:`KernelSpec` values, which
name a module to import lazily, so that listing kernels never imports a DSL. The module's
attribute (``KERNEL`` by default) is an object implementing :class:`Kernel`. A kernel's identity
(backend, name, rung, arch, description) is written once, in its spec; a kernel object that also
reports it (built-in backends hand the spec to the kernel, see ``backends/*/__init__.py``) must
report the same values, or :meth:`KernelSpec.load` refuses it.

The GEMM is the "TN" convention (:mod:`harness.gemm`). A kernel may declare a config
space (:mod:`harness.configs`): its knobs as a frozen dataclass, a finite menu and a default
choice per problem.
"""

from __future__ import annotations

import enum
import importlib
import importlib.util
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from harness.configs import (
    ConfigSpace,
    KernelConfig,
    TunedTable,
    current_gpu_name,
    quiet_knob,
    tuned_table_path,
)
from harness.gemm import DTYPES, Problem, cdiv, element_size, k_alignment_reason, validate_k

__all__ = [
    "ARCHES",
    "ARCH_CAPABILITY",
    "DTYPES",
    "ENTRY_POINT_GROUP",
    "Artifacts",
    "ConfigSpace",
    "ConfigurableKernel",
    "Kernel",
    "KernelConfig",
    "KernelSpec",
    "LaunchFn",
    "Problem",
    "Rung",
    "SpecKernel",
    "TunedTable",
    "cdiv",
    "current_gpu_name",
    "element_size",
    "k_alignment_reason",
    "quiet_knob",
    "rung_specs",
    "spec_of_module",
    "tma_launch",
    "tuned_table_path",
    "validate_k",
]

#: Entry-point group through which an installed package contributes kernels. Each entry point
#: names a zero-argument callable returning an iterable of :class:`KernelSpec`.
ENTRY_POINT_GROUP = "gemm_dsl_study.backends"

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
    """The speedup chain: each rung changes one thing from the one before (docs/design.md)."""

    CUBLAS = 0
    TILED = 1
    TMA = 2
    PIPELINED = 3
    PERSISTENT = 4
    WARP_SPECIALIZED = 5
    CLUSTER2 = 6
    MULTI_CONSUMER = 7
    SHAPE_ADAPTIVE = 8

    @property
    def label(self) -> str:
        """The rung's name as used in results and plots, e.g. ``warp_specialized``."""
        return self.name.lower()

    @classmethod
    def parse(cls, value: str | int) -> Rung:
        """Accept ``5``, ``"5"`` or ``"warp_specialized"``."""
        try:
            if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
                return cls(int(value))
            return cls[str(value).upper()]
        except (KeyError, ValueError):
            names = ", ".join(f"{int(r)} {r.label}" for r in cls)
            raise ValueError(f"unknown rung {value!r}; the rungs are: {names}") from None


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
    """One kernel of one backend at one rung for one target arch.

    Its identity (backend, name, rung, arch, description) is its :class:`KernelSpec`'s; a kernel
    object may also report it as attributes (the built-in ones do, from their spec), and then
    :meth:`KernelSpec.load` checks that the two agree.

    A kernel that declares a config space (:class:`ConfigurableKernel`) takes the config as an
    optional last argument of ``supports``, ``compile`` and ``codegen``; ``None`` means its own
    choice, ``select(problem)``.
    """

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


@runtime_checkable
class ConfigurableKernel(Kernel, Protocol):
    """A kernel with a declared config space (:mod:`harness.configs`).

    ``configs`` is the finite menu; ``select(problem)`` the default choice (tuned table first,
    then a heuristic); ``supports``/``compile``/``codegen`` accept ``config=`` (a menu entry).
    Optional, not part of the protocol's checks: ``ranked(problem)`` (the order ``bench
    --tune-top`` times) and ``selection_reason(problem, config)`` (why ``select`` chose it,
    one line, recorded as ``BenchRecord.selection``).
    """

    configs: tuple[KernelConfig, ...]

    def select(self, problem: Problem) -> KernelConfig:
        """The config this kernel runs ``problem`` with unless told otherwise."""
        ...


def _version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _installed_version(pin: str) -> tuple[str | None, bool]:
    """(the installed version of ``pin``'s distribution or None, whether it satisfies the pin
    ``name==v`` / ``name>=v``)."""
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
        return None, False
    ok = (
        (_version_tuple(have) == _version_tuple(want))
        if op == "=="
        else (_version_tuple(have) >= _version_tuple(want))
    )
    return have, ok


@dataclass(frozen=True)
class KernelSpec:
    """A kernel's identity plus where to find it, importable without its DSL.

    ``requires`` lists the Python modules the kernel needs (e.g. ``("cutlass",)``), so that
    ``python -m harness list`` can say why a kernel cannot run here without importing it.
    ``pins`` lists distribution versions the kernel is written for (``"triton==3.9.0"``,
    ``"nvidia-cutlass-dsl>=4.8"``): a different installed version is reported as a reason too.
    ``devices`` names where its launch function runs: ``("cuda",)`` for every real kernel;
    kernels that run on the host (test kernels, a CPU plugin) declare ``("cpu",)`` and are
    benchmarked with ``bench --device cpu``.
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
    def distributions(self) -> tuple[str, ...]:
        """The distributions named in ``pins`` (recorded with their versions in every run)."""
        names = []
        for pin in self.pins:
            for op in ("==", ">="):
                if op in pin:
                    names.append(pin.split(op, 1)[0].strip())
                    break
        return tuple(names)

    @property
    def id(self) -> str:
        """``backend/name``, e.g. ``gluon/sm90/r5_warp_specialized`` (results, tests, plots)."""
        return f"{self.backend}/{self.name}"

    def missing_requirements(self) -> list[str]:
        """Modules in ``requires`` not importable here and ``pins`` not met (nothing imported):
        a pin names its distribution when it is not installed, and the version found when that
        does not meet it."""
        return self._unmet(missing=True, drift=True)

    def missing_modules(self) -> list[str]:
        """Modules in ``requires`` not importable here and pinned distributions not installed."""
        return self._unmet(missing=True, drift=False)

    def pin_drift(self) -> list[str]:
        """Pins whose distribution is installed at a version that does not meet them, each as
        ``"name==v (found w)"``: the DSL is there, but not the release the kernel is written
        for."""
        return self._unmet(missing=False, drift=True)

    def _unmet(self, missing: bool, drift: bool) -> list[str]:
        unmet = []
        for mod in self.requires if missing else ():
            try:
                found = importlib.util.find_spec(mod) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                unmet.append(mod)
        for pin in self.pins:
            have, ok = _installed_version(pin)
            if have is None and missing:
                unmet.append(pin)
            elif have is not None and not ok and drift:
                unmet.append(f"{pin} (found {have})")
        return unmet

    def load(self) -> Kernel:
        """Import the kernel's module and return its :class:`Kernel`, checking identity."""
        obj = getattr(importlib.import_module(self.module), self.attr)
        kernel = obj() if isinstance(obj, type) else obj
        if not isinstance(kernel, Kernel):
            raise TypeError(f"{self.module}.{self.attr} does not implement harness.protocol.Kernel")
        for attr in ("backend", "name", "arch", "description"):
            if hasattr(kernel, attr) and getattr(kernel, attr) != getattr(self, attr):
                raise TypeError(
                    f"{self.id}: spec says {attr}={getattr(self, attr)!r} but the kernel says "
                    f"{getattr(kernel, attr)!r}"
                )
        if hasattr(kernel, "rung") and Rung(kernel.rung) != self.rung:
            raise TypeError(f"{self.id}: spec rung {self.rung.label} != kernel rung {kernel.rung}")
        return kernel


class SpecKernel:
    """A convenience base for a backend's kernel class: its identity comes from ``self.spec``
    (written once, in the backend's list) and its config space, if any, from ``self.space``.

    The constructor takes what every backend's kernel class has: ``spec``, the rung's own
    limits (``supports``), a config space for a rung with knobs (``space``), and the findings
    its codegen reports (``raw_ptx``: features reached only through inline PTX; ``notes``).
    Subclasses add their DSL's pieces and implement ``_launcher`` (``compile`` checks and
    caches it) and ``codegen``; ``supports`` is the TMA kernels' rule (K keeps the rows of A
    and B 16-byte aligned) plus the rung's limits and the config's; ``config_for(problem,
    config)`` resolves an omitted config to the kernel's own choice.
    """

    spec: KernelSpec
    space: ConfigSpace[Any] | None = None
    #: The rung's own limits (e.g. rung 1's tile multiples): a one-line reason, or None.
    rung_supports: Callable[[Problem], str | None] | None = None
    raw_ptx: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __init__(
        self,
        spec: KernelSpec,
        *,
        supports: Callable[[Problem], str | None] | None = None,
        space: ConfigSpace[Any] | None = None,
        raw_ptx: Sequence[str] = (),
        notes: Sequence[str] = (),
    ) -> None:
        self.spec = spec
        self.rung_supports = supports
        self.space = space
        self.raw_ptx = tuple(raw_ptx)
        self.notes = tuple(notes)

    backend = property(lambda self: self.spec.backend)
    name = property(lambda self: self.spec.name)
    rung = property(lambda self: self.spec.rung)
    arch = property(lambda self: self.spec.arch)
    description = property(lambda self: self.spec.description)

    @property
    def configs(self) -> tuple[KernelConfig, ...] | None:
        """The menu, or None for a kernel without a config space."""
        return self.space.menu if self.space is not None else None

    def select(self, problem: Problem) -> KernelConfig | None:
        """The tuned table's choice for this GPU, else the heuristic's (None: no configs)."""
        if self.space is None:
            return None
        return self.space.select(self.spec.id, problem, current_gpu_name())

    def selection_reason(self, problem: Problem, config: KernelConfig) -> str | None:
        """Why ``config`` is this kernel's choice for ``problem`` on this GPU (None: it is
        not, or the kernel has no configs): ``ConfigSpace.reason``."""
        if self.space is None:
            return None
        return self.space.reason(self.spec.id, problem, config, current_gpu_name())

    def ranked(self, problem: Problem) -> Sequence[KernelConfig] | None:
        """The space's ranking of the configs for ``problem`` (None: it has none)."""
        if self.space is None or self.space.rank is None:
            return None
        return self.space.rank(problem)

    def config_for(self, problem: Problem, config: KernelConfig | None) -> KernelConfig | None:
        return config if config is not None else self.select(problem)

    def compile(self, problem: Problem, config: KernelConfig | None = None) -> LaunchFn:
        """The launch function for ``problem`` with ``config`` (None: the kernel's own choice),
        built once by the subclass's ``_launcher(problem, config)``; a problem ``supports``
        refuses raises ValueError with the reason."""
        config = self.config_for(problem, config)
        # One cache per kernel object, made on first use (subclasses need not call a base init).
        launchers = self.__dict__.setdefault("_launchers", {})
        if (problem, config) not in launchers:
            reason = self.supports(problem, config)
            if reason:
                raise ValueError(f"{self.spec.id} cannot run {problem.key}: {reason}")
            launchers[(problem, config)] = self._launcher(problem, config)
        return launchers[(problem, config)]

    def _launcher(self, problem: Problem, config: KernelConfig | None) -> LaunchFn:
        """Build the launch function (JIT, descriptors, a first launch); see ``compile``."""
        raise NotImplementedError(f"{type(self).__name__} builds no launch function")

    def supports(self, problem: Problem, config: KernelConfig | None = None) -> str | None:
        """Why this kernel cannot run ``problem`` (with ``config``; None: its own choice)."""
        return (
            k_alignment_reason(problem)
            or (self.rung_supports(problem) if self.rung_supports else None)
            or self.config_reason(problem, config)
        )

    def config_reason(self, problem: Problem, config: KernelConfig | None) -> str | None:
        """Why ``config`` (None: the kernel's own choice) cannot run ``problem``, or None."""
        if self.space is None:
            return None
        return self.space.valid(problem, self.config_for(problem, config))


def rung_specs(
    backend: str,
    package: str,
    table: Iterable[tuple[str, Rung, str, str]],
    requires: tuple[str, ...],
    pins: tuple[str, ...],
) -> list[KernelSpec]:
    """A built-in backend's specs from its table of ``(folder/module, rung, arch, description)``:
    kernel ``<backend>/<folder>/<module>``, imported lazily from ``<package>.<folder>.<module>``."""
    return [
        KernelSpec(
            backend=backend,
            name=name,
            rung=rung,
            arch=arch,
            description=description,
            module=f"{package}.{name.replace('/', '.')}",
            requires=requires,
            pins=pins,
        )
        for name, rung, arch, description in table
    ]


def spec_of_module(specs: Iterable[KernelSpec], module: str) -> KernelSpec:
    """The spec naming ``module``: how a built-in kernel module finds its own identity, so that
    identity is written once (in the backend's list) and never repeated in the module."""
    for spec in specs:
        if spec.module == module:
            return spec
    raise LookupError(f"no kernel spec names module {module!r}; list it in its backend")


def tma_launch(
    problem: Problem,
    run: Callable[[Any, Any, Any], None],
    device: Any,
    pad_d: bool = True,
) -> LaunchFn:
    """The launch function of a kernel that stores D by TMA, built and warmed up.

    TMA needs 16-byte row strides. A's and B's rows are K long (``k_alignment_reason``), but
    D's are N long: when they are not 16-byte aligned no descriptor over ``out`` exists, so
    ``run(a, b, d)`` gets a padded scratch D instead (allocated once, here; its row stride is
    ``d.shape[1]``) and the launch copies its first N columns out. Only such ragged shapes pay
    that extra pass; ``pad_d=False`` (a kernel that stores D without TMA) never pads.

    ``run`` is launched once on zero inputs before this returns, so that a JIT or build at the
    first call never lands in timing.
    """
    import torch

    dt = {"fp16": torch.float16, "bf16": torch.bfloat16}[problem.dtype]
    align = 16 // element_size(problem.dtype)
    ld = cdiv(problem.n, align) * align
    scratch = None
    if pad_d and ld != problem.n:
        scratch = torch.empty(problem.m, ld, dtype=dt, device=device)

    def launch(a: Any, b: Any, out: Any) -> None:
        run(a, b, out if scratch is None else scratch)
        if scratch is not None:
            out.copy_(scratch[:, : problem.n])

    a = torch.zeros(problem.m, problem.k, dtype=dt, device=device)
    b = torch.zeros(problem.n, problem.k, dtype=dt, device=device)
    launch(a, b, torch.empty(problem.m, problem.n, dtype=dt, device=device))
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
    return launch
