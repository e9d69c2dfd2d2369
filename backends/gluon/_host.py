"""Host side shared by every Gluon rung: the ``Kernel`` implementation, launch and codegen.

A rung module writes its ``@gluon.jit`` kernel and a *plan* — a pure function of the problem
and the SM count that says which arguments the kernel takes (TMA descriptors with their block
shape and CTA layout, raw pointers, integers), its constexprs, grid, warps and CTAs per cluster.
:class:`GluonKernel` turns that plan into the two things the harness asks for:

* ``compile(problem)``: JIT-compiles once per problem (Triton caches by signature and
  constexprs; we also keep the launch closure per problem), and returns ``fn(a, b, out)`` that
  builds host TMA descriptors for the given tensors and launches on torch's current stream;
* ``codegen(problem, arch)``: compiles for sm_90a / sm_100a with ``GluonASTSource`` and an
  explicit ``GPUTarget`` — no GPU, no driver, no torch.

Nothing here is imported by ``backends.gluon.__init__``; Triton and torch load lazily.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.protocol import (
    Artifacts,
    ConfigSpace,
    KernelConfig,
    KernelSpec,
    LaunchFn,
    Problem,
    SpecKernel,
    tma_launch,
)
from harness.toolchain import DEFAULT_NUM_SMS, ptxas_resources

_ARCH_CAPABILITY = {"sm_90a": 90, "sm_100a": 100}


@dataclass(frozen=True)
class Desc:
    """A TMA descriptor argument over operand ``tensor`` ("a", "b" or "c")."""

    tensor: str
    block_shape: tuple[int, int]
    #: CTA-layout bases of the *cluster* tile (Gluon's ``cga_layout``); () for one CTA.
    cga_layout: tuple[tuple[int, int], ...] = ()
    #: Element type when it is not the problem's (rung 8's fp32 split-K workspace "w").
    dtype: str | None = None


@dataclass(frozen=True)
class Ptr:
    """A raw pointer argument to operand ``tensor``."""

    tensor: str
    dtype: str | None = None  # as in Desc


@dataclass(frozen=True)
class Plan:
    """Everything a launch (or an offline compile) of one rung needs, decided by the host."""

    args: tuple[Desc | Ptr | int, ...]
    constexprs: dict[str, Any]
    grid: tuple[int, ...]
    num_warps: int = 4
    num_ctas: int = 1
    options: dict[str, Any] = field(default_factory=dict)


#: ``plan(problem, num_sms)``, or ``plan(problem, num_sms, config)`` for a rung with configs.
PlanFn = Callable[..., Plan]


def gl_dtype(dtype: str) -> Any:
    from triton.experimental.gluon import language as gl

    return {"fp16": gl.float16, "bf16": gl.bfloat16, "fp32": gl.float32}[dtype]


def shared_layout(desc: Desc, dtype: str) -> Any:
    """The NVMMA (wgmma/tcgen05-ready, swizzled) shared layout a TMA tile lands in."""
    from triton.experimental.gluon import language as gl

    cga = [list(b) for b in desc.cga_layout] or None
    return gl.NVMMASharedLayout.get_default_for(
        list(desc.block_shape), gl_dtype(desc.dtype or dtype), cga_layout=cga
    )


class _FakeDtype:
    """Stands in for ``torch.float16`` where Triton only reads ``str(dtype)``."""

    def __init__(self, dtype: str) -> None:
        self._name = {"fp16": "float16", "bf16": "bfloat16"}[dtype]

    def __str__(self) -> str:
        return f"torch.{self._name}"


def _type_string(arg: Desc | Ptr | int, dtype: str) -> str:
    """Triton's signature type for one argument (what the JIT would infer from a real one)."""
    if isinstance(arg, (Desc, Ptr)):
        dtype = arg.dtype or dtype
    short = {"fp16": "fp16", "bf16": "bf16", "fp32": "fp32"}[dtype]
    if isinstance(arg, Desc):
        shape = ",".join(map(str, arg.block_shape))
        return f"tensordesc<{short}[{shape}],{shared_layout(arg, dtype)!r}>"
    if isinstance(arg, Ptr):
        return f"*{short}"
    return "i32"


class GluonKernel(SpecKernel):
    """One Gluon rung for one arch, implementing ``harness.protocol.Kernel``.

    Its identity is its ``spec`` (the backend's list, written once). A rung with tuning knobs
    passes ``space`` (menu, heuristic, which config fits which problem); its plan then receives
    the config, and ``configs``/``select`` expose the space to the harness.
    """

    def __init__(
        self,
        spec: KernelSpec,
        *,
        jit_fn: Any,
        plan: PlanFn,
        supports: Callable[[Problem], str | None] | None = None,
        space: ConfigSpace[Any] | None = None,
        raw_ptx: Sequence[str] = (),
        notes: Sequence[str] = (),
    ) -> None:
        super().__init__(spec, supports=supports, space=space, raw_ptx=raw_ptx, notes=notes)
        self._jit_fn = jit_fn
        self._plan = plan

    def _make_plan(self, problem: Problem, num_sms: int, config: KernelConfig | None) -> Plan:
        if self.space is None:
            return self._plan(problem, num_sms)  # type: ignore[call-arg]
        return self._plan(problem, num_sms, config)  # type: ignore[call-arg]

    # -- protocol ------------------------------------------------------------------------------
    def _launcher(self, problem: Problem, config: KernelConfig | None) -> LaunchFn:
        import torch

        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        num_sms = props.multi_processor_count
        plan = self._make_plan(problem, num_sms, config)
        kernel = bind(self._jit_fn, plan, problem.dtype)
        dev = torch.device("cuda", torch.cuda.current_device())
        c_by_tma = any(isinstance(a, Desc) and a.tensor == "c" for a in plan.args)

        def run(a: Any, b: Any, d: Any) -> None:
            kernel({"a": a, "b": b, "c": d})

        # Padded D for ragged N, and a first launch on zeros so that timing never sees the JIT.
        launch = tma_launch(problem, run, dev, pad_d=c_by_tma)
        return launch

    def codegen(self, problem: Problem, arch: str, config: KernelConfig | None = None) -> Artifacts:
        plan = self._make_plan(problem, DEFAULT_NUM_SMS, self.config_for(problem, config))
        return compile_offline(
            self._jit_fn, plan, problem.dtype, arch, raw_ptx=self.raw_ptx, notes=self.notes
        )


def bind(jit_fn: Any, plan: Plan, dtype: str) -> Callable[[dict[str, Any]], None]:
    """``launch(tensors)``: builds the plan's host TMA descriptors over ``tensors`` (by operand
    name: "a", "b", "c", ...) and launches ``jit_fn`` on torch's current stream."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layouts = {id(a): shared_layout(a, dtype) for a in plan.args if isinstance(a, Desc)}
    kernel = jit_fn[plan.grid]
    opts = _options(plan)

    def launch(tensors: dict[str, Any]) -> None:
        args: list[Any] = []
        for arg in plan.args:
            if isinstance(arg, Desc):
                args.append(
                    TensorDescriptor.from_tensor(
                        tensors[arg.tensor], list(arg.block_shape), layouts[id(arg)]
                    )
                )
            elif isinstance(arg, Ptr):
                args.append(tensors[arg.tensor])
            else:
                args.append(arg)
        kernel(*args, **plan.constexprs, **opts)

    return launch


def compile_offline(
    jit_fn: Any,
    plan: Plan,
    dtype: str,
    arch: str,
    raw_ptx: Sequence[str] = (),
    notes: Sequence[str] = (),
    divisible: Sequence[str] = (),
) -> Artifacts:
    """Compile ``jit_fn`` with ``plan`` for ``arch`` without a GPU (``GluonASTSource``).

    Integer arguments compile unspecialized, unless named in ``divisible``: those as the JIT
    compiles them when a launch passes a multiple of 16 (``tt.divisibility``)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon import GluonASTSource

    if arch not in _ARCH_CAPABILITY:
        raise ValueError(f"gluon codegen supports {sorted(_ARCH_CAPABILITY)}, not {arch!r}")
    names = list(jit_fn.arg_names)
    signature: dict[str, str] = {}
    for name, arg in zip(names, plan.args, strict=False):
        signature[name] = _type_string(arg, dtype)
    for name in names[len(plan.args) :]:
        signature[name] = "constexpr"
    unknown = sorted(set(divisible) - set(names))
    if unknown:
        raise ValueError(f"divisible: {unknown} name no argument of {jit_fn.__name__}")
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(names) if name in divisible}
    src = GluonASTSource(jit_fn, signature, constexprs=dict(plan.constexprs), attrs=attrs)
    target = GPUTarget("cuda", _ARCH_CAPABILITY[arch], 32)
    options = _options(plan)
    from triton import knobs

    # Bypass Triton's on-disk cache so compile_seconds measures a real compile.
    with knobs.compilation.scope():
        knobs.compilation.always_compile = True
        start = time.perf_counter()
        compiled = triton.compile(src, target=target, options=options)
        seconds = time.perf_counter() - start
    meta = compiled.metadata
    ptx = compiled.asm.get("ptx")
    resources = _triton_ptxas_resources(ptx, arch) or {}
    return Artifacts(
        arch=arch,
        ptx=ptx,
        cubin=compiled.asm.get("cubin"),
        registers=resources.get("registers"),
        spill_bytes=resources.get("spill_bytes"),
        shared_bytes=getattr(meta, "shared", None),
        compile_seconds=seconds,
        raw_ptx=tuple(raw_ptx),
        notes=tuple(notes),
    )


def _options(plan: Plan) -> dict[str, Any]:
    """Compile options of a plan. FP fusion is asked for explicitly: it is Triton 3.9's default
    (3.10 flips it), and leaving it unset makes Triton warn on every compile."""
    return dict(
        num_warps=plan.num_warps, num_ctas=plan.num_ctas, enable_fp_fusion=True, **plan.options
    )


def _triton_ptxas_resources(ptx: str | None, arch: str) -> dict[str, int] | None:
    """``ptxas -v``'s report, run with the ptxas Triton compiles with: Triton 3.9 assembles
    every sm_90+ target with its bundled ``ptxas-blackwell`` (CUDA 13.x; its PTX is ISA 9.x,
    which older ptxas refuse). Best effort: None when it cannot run."""
    try:
        from triton import knobs

        ptxas = knobs.nvidia.ptxas_blackwell.path
    except Exception:  # resources are optional in Artifacts
        return None
    return ptxas_resources(ptx, arch, ptxas=ptxas)
