"""What one launch runs on the device: the kernels a profiled launch shows, each with its time.

``bench --check-only --launched`` profiles one correct launch of every (kernel, config,
problem) and records what the device ran (:class:`DeviceKernel`, a record's ``launched``). A
study kernel's launch may be several device kernels (a split-K or stream-K reduction after
the GEMM, a fill of the partials), and its time splits between them. cuBLAS's launch names
the kernel cuBLAS chose, and that name carries its tile, stages and cluster
(:func:`cublas_tile`), which is the choice each rung 8 is measured against: where a shape
loses, this says what cuBLAS ran there, on this GPU.

Why only without timing: the profiler (CUPTI, through ``torch.profiler``) stays loaded in a
process once used, and the runs whose numbers are reported must not carry it. The per-kernel
times are the profiler's, over a few back-to-back launches of one input set: a breakdown of
one launch, not a benchmark.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DeviceKernel",
    "aggregate",
    "cublas_tile",
    "main_kernel",
    "profile_launch",
    "short_name",
    "summary",
]

#: Launches profiled per (kernel, config, problem), after one unprofiled warm launch.
LAUNCHES = 3


@dataclass(frozen=True)
class DeviceKernel:
    """One device kernel (or memset/memcpy) of a launch: its name as the profiler gives it,
    how many times one launch runs it, and its mean device time per run in microseconds."""

    name: str
    calls: float
    us: float


def aggregate(events: Iterable[tuple[str, float]], launches: int) -> tuple[DeviceKernel, ...]:
    """Device activities ``(name, microseconds)`` of ``launches`` launches, in the order run,
    folded into one launch's kernels in first-run order."""
    if launches < 1:
        raise ValueError(f"launches must be >= 1, got {launches}")
    count: dict[str, int] = {}
    total: dict[str, float] = {}
    for name, us in events:
        count[name] = count.get(name, 0) + 1
        total[name] = total.get(name, 0.0) + us
    return tuple(DeviceKernel(n, count[n] / launches, total[n] / count[n]) for n in count)


def main_kernel(kernels: Iterable[DeviceKernel]) -> DeviceKernel:
    """The kernel a launch spends the most device time in (its GEMM, beside a reduction)."""
    return max(kernels, key=lambda k: k.us * k.calls)


def short_name(name: str, width: int) -> str:
    """A profiler's kernel name without its ``void`` and cut to ``width`` characters."""
    name = name.removeprefix("void ")
    return name if len(name) <= width else name[: width - 3] + "..."


_NVJET = re.compile(r"nvjet_(?:[a-z0-9]+_)+?(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_")
_CUTLASS3 = re.compile(r"cutlass3x_sm\d+_\w*?_(\d+)x(\d+)x(\d+)_(\d+)x(\d+)x\d+_")
_CUTLASS2 = re.compile(r"cutlass_\d+_\w*?gemm_(\d+)x(\d+)_(\d+)x(\d+)_")
_XMMA_TILE = re.compile(r"tilesize(\d+)x(\d+)x(\d+)")
_XMMA_CLUSTER = re.compile(r"cluster(\d+)x(\d+)x\d+")


def cublas_tile(name: str) -> str | None:
    """The tile a cuBLAS kernel's name states, ``"128x256x64, 4 stages, cluster 2x1"``, or None
    where the name states none (a reduction, a memset, another library's kernel).

    Read as cuBLAS names it, in cuBLAS's column-major order: torch hands cuBLAS the transposed
    product (``D^T = B A^T``), so the first tile dimension runs along the problem's N and the
    second along its M. The name families read: ``nvjet_sm90_hsh_192x104_64x5_1x2_h_bz_TNT`` (tile
    192x104, 64-deep k-steps, 5 stages, cluster 1x2), CUTLASS 3's
    ``cutlass3x_sm90_..._128x256x64_2x1x1_...``, CUTLASS 2's
    ``cutlass_80_..._gemm_256x128_32x3_...`` and the older
    ``sm90_xmma_gemm_..._tilesize128x256x64_cluster2x1x1_...``."""
    if m := _NVJET.search(name):
        tm, tn, tk, stages, cm, cn = m.groups()
        return f"{tm}x{tn}x{tk}, {stages} stages, cluster {cm}x{cn}"
    if m := _CUTLASS3.search(name):
        tm, tn, tk, cm, cn = m.groups()
        return f"{tm}x{tn}x{tk}, cluster {cm}x{cn}"
    if m := _CUTLASS2.search(name):
        tm, tn, tk, stages = m.groups()
        return f"{tm}x{tn}x{tk}, {stages} stages"
    if m := _XMMA_TILE.search(name):
        out = "x".join(m.groups())
        if c := _XMMA_CLUSTER.search(name):
            out += f", cluster {c.group(1)}x{c.group(2)}"
        return out
    return None


def summary(kernels: Iterable[DeviceKernel], width: int = 96) -> list[str]:
    """One line per kernel for logs and reports: time, runs per launch, name (cut to
    ``width``) and, where the name states one, cuBLAS's tile."""
    lines = []
    for k in kernels:
        runs = "" if k.calls == 1 else f" x{k.calls:g}"
        tile = cublas_tile(k.name)
        line = f"{k.us:10.1f} us{runs}  {short_name(k.name, width)}"
        lines.append(line + (f"  [{tile}]" if tile else ""))
    return lines


def profile_launch(
    launch: Callable[..., None], operands: tuple[Any, Any, Any], device: str
) -> tuple[DeviceKernel, ...]:
    """The device kernels of one ``launch(a, b, d)``, from the profiler over :data:`LAUNCHES`
    launches after one warm launch outside it (a kernel's own failure surfaces there, not as
    the profiler's). On a CPU, the launch's top-level operators and their host times."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    from harness.check import synchronize
    from harness.quiet import quiet_stderr

    a, b, d = operands
    launch(a, b, d)
    synchronize(device)
    cuda = device == "cuda"
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    with quiet_stderr():
        with profile(activities=activities) as prof:
            for _ in range(LAUNCHES):
                launch(a, b, d)
            synchronize(device)
        events = prof.events()
    if cuda:
        seen = [e for e in events if e.device_type == DeviceType.CUDA]
        if not seen:
            raise RuntimeError(
                "the profiler recorded no device activity (is CUPTI missing from this torch?)"
            )
    else:
        seen = [e for e in events if e.cpu_parent is None]
    seen.sort(key=lambda e: e.time_range.start)
    return aggregate(((e.name, e.time_range.elapsed_us()) for e in seen), LAUNCHES)
