"""Compile-only comparison: what each kernel compiles to, without a GPU.

For every kernel, ``Kernel.codegen`` runs in an isolated worker; the harness then fills what the
backend left out — registers, spills and static shared memory from ``ptxas -v`` on the PTX
(:mod:`harness.toolchain`) — counts the kernel module's lines of code, and lists the hardware
features found in the PTX.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from harness.isolate import Worker, WorkerDied, WorkerEnv
from harness.protocol import Artifacts, KernelSpec, Problem, Rung
from harness.records import CodegenRecord, Status
from harness.runner import SpecStatus, survey
from harness.toolchain import ptxas_resources

__all__ = ["PTX_FEATURES", "codegen_records", "config_menus", "count_loc", "ptx_features"]

#: feature -> regex over PTX text. Order is the order of the report's table.
PTX_FEATURES: dict[str, str] = {
    "mma.sync": r"\bmma\.sync\.aligned",
    "wgmma": r"\bwgmma\.mma_async",
    "tma_load": r"cp\.async\.bulk\.tensor\.\dd\.(cta_group::\d\.)?shared::(cluster|cta)\.global",
    "tma_store": r"cp\.async\.bulk\.tensor\.\dd\.global\.shared::cta",
    "tma_multicast": r"cp\.async\.bulk\.tensor[\w.:]*\.multicast::cluster",
    "mbarrier": r"\bmbarrier\.",
    "cluster": r"\.reqnctapercluster|\.explicitcluster|%cluster_ctarank|barrier\.cluster",
    "setmaxnreg": r"\bsetmaxnreg\.",
    "stmatrix": r"\bstmatrix\.",
    "tcgen05.mma.cta_group::2": r"tcgen05\.mma\.cta_group::2",
    "tcgen05.alloc.cta_group::2": r"tcgen05\.alloc\.cta_group::2",
    "tcgen05.mma": r"tcgen05\.mma\b",
    "clc": r"clusterlaunchcontrol\.try_cancel",
}


def ptx_features(ptx: str) -> list[str]:
    return [name for name, rx in PTX_FEATURES.items() if re.search(rx, ptx)]


def count_loc(module: str) -> int | None:
    """Non-blank, non-comment lines of a kernel module (docstrings count as code-adjacent text
    and are excluded too, so the number measures the kernel itself)."""
    try:
        spec = importlib.util.find_spec(module)
    except ImportError:
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    lines = Path(spec.origin).read_text().splitlines()
    n, in_doc, quote = 0, False, ""
    for raw in lines:
        line = raw.strip()
        if in_doc:
            if quote in line:
                in_doc = False
            continue
        if line.startswith(('"""', "'''")):
            quote = line[:3]
            if not (len(line) >= 6 and line.endswith(quote)):
                in_doc = True
            continue
        if line and not line.startswith("#"):
            n += 1
    return n


def config_menus(
    specs: Sequence[KernelSpec],
    timeout_s: float = 600.0,
    envs: Mapping[str, WorkerEnv] | None = None,
) -> dict[str, list[str] | str | None]:
    """kernel id -> its config menu (names), None without a config space, or why it did not
    load (a text). Each kernel is loaded in a worker of its own, in its backend's environment
    (``envs``), as codegen loads it, so a ``--config`` can be checked before anything
    compiles."""
    out: dict[str, list[str] | str | None] = {}
    for spec in specs:
        w = Worker(spec, device="cpu", env=(envs or {}).get(spec.backend, WorkerEnv()))
        try:
            reply = w.call({"op": "describe"}, timeout=timeout_s)
        except (TimeoutError, WorkerDied) as e:
            out[spec.id] = f"{type(e).__name__}: {e}"
            continue
        finally:
            w.stop()
        if reply.get("status") == Status.ERROR.value:
            out[spec.id] = str(reply.get("error"))
        else:
            out[spec.id] = reply["configs"]
    return out


def codegen_records(
    specs: Sequence[KernelSpec],
    problem: Problem,
    timeout_s: float = 600.0,
    log: Callable[[str], None] = lambda _m: None,
    ptx_dir: Path | None = None,
    config: str | None = None,
    configurable: Collection[str] | None = None,
    envs: Mapping[str, WorkerEnv] | None = None,
) -> Iterator[CodegenRecord]:
    """One codegen record per kernel (the reference library has no PTX and is skipped).

    ``config`` forces a config on kernels that declare a config space (default: each kernel's
    own choice for ``problem``, which without a GPU is its heuristic's); ``configurable`` names
    those kernels (default: every kernel gets it), the others compile their one form. ``envs``
    names the environment each backend compiles in (default: the harness's own); a kernel whose
    environment lacks what it needs is recorded unsupported, "not installed".
    """
    specs = [s for s in specs if s.rung != Rung.CUBLAS]
    envs = envs or {}
    status = survey(specs, envs, timeout_s)
    for spec in specs:
        env = envs.get(spec.backend, WorkerEnv())
        forced = config if configurable is None or spec.id in configurable else None
        rec = _codegen_one(spec, problem, timeout_s, ptx_dir, forced, env, status[spec.id])
        detail = (
            f"{rec.registers} regs, {len(rec.features)} features"
            if rec.status == Status.OK
            else str(rec.reason)
        )
        log(f"    {rec.label:<48} {rec.status.value:<11} {detail}")
        yield rec


def _codegen_one(
    spec: KernelSpec,
    problem: Problem,
    timeout_s: float,
    ptx_dir: Path | None,
    config: str | None,
    env: WorkerEnv,
    status: SpecStatus,
) -> CodegenRecord:
    arch = spec.arch
    rec = CodegenRecord(**CodegenRecord.identity(spec), lines_of_code=count_loc(spec.module))
    if status.missing:
        return replace(rec, status=Status.UNSUPPORTED, reason=status.reason)
    w = Worker(spec, device="cpu", env=env)
    try:
        cmd = {"op": "codegen", "problem": problem, "arch": arch, "config": config}
        reply = w.call(cmd, timeout=timeout_s)
    except TimeoutError as e:
        return replace(rec, status=Status.TIMEOUT, reason=str(e))
    except WorkerDied as e:
        return replace(rec, reason=str(e))
    finally:
        w.stop()
    if reply.get("status") == Status.ERROR.value:
        return replace(rec, reason=reply.get("error"))
    art: Artifacts = reply["artifacts"]
    notes = list(art.notes)
    rec = replace(
        rec,
        status=Status.OK,
        config=reply.get("config"),
        config_values=reply.get("config_values"),
        registers=art.registers,
        spill_bytes=art.spill_bytes,
        shared_bytes=art.shared_bytes,
        compile_seconds=art.compile_seconds if art.compile_seconds is not None else reply["wall_s"],
        raw_ptx=tuple(art.raw_ptx),
    )
    if art.ptx:
        rec = replace(rec, ptx_bytes=len(art.ptx), features=tuple(ptx_features(art.ptx)))
        if art.registers is None:
            res = ptxas_resources(art.ptx, arch)
            if res:
                if not res["shared_bytes"]:  # ptxas sees only static shared memory
                    res["shared_bytes"] = None
                    notes.append("shared memory is dynamic: not visible to ptxas")
                rec = replace(rec, **res)
        if ptx_dir is not None:
            ptx_dir.mkdir(parents=True, exist_ok=True)
            (ptx_dir / (spec.id.replace("/", "__") + ".ptx")).write_text(art.ptx)
    return replace(rec, notes=tuple(notes))
