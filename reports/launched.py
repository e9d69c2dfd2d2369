"""``python -m reports launched RESULTS ...``: what each launch ran on the device, side by side.

Reads the ``launched`` of runs made with ``bench --check-only --launched`` (:mod:`harness.launched`)
and gives one row per shape, GPU and kernel: the device time of one launch, its main kernel
(the one with the most time) and, for cuBLAS, the tile, stages and cluster that kernel's name
states, then every other kernel of the launch (a reduction, a fill). Rows of one shape sit
together, so the same shape on two GPUs shows whether cuBLAS changed its choice between them,
and a split or stream-K config shows what its reduction costs beside its GEMM.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from harness.launched import DeviceKernel, cublas_tile, main_kernel, short_name
from harness.records import BenchRecord
from harness.results import Document
from harness.summary import text_table

__all__ = ["LaunchRow", "format_launched", "launch_rows"]


@dataclass(frozen=True)
class LaunchRow:
    """One profiled launch: a (shape, GPU, kernel and config) and what it ran."""

    shape: str
    m: int
    gpu: str
    label: str
    kernels: tuple[DeviceKernel, ...]

    @property
    def us(self) -> float:
        """Device time of one launch: every kernel's time times its runs per launch."""
        return sum(k.us * k.calls for k in self.kernels)

    @property
    def main(self) -> DeviceKernel:
        return main_kernel(self.kernels)


def launch_rows(docs: Iterable[Document], kernels: Iterable[str] = ()) -> list[LaunchRow]:
    """Every profiled launch of ``docs`` (only ``kernels``' when given), by shape (M, then the
    key), then GPU, with cuBLAS first among the kernels of a shape and GPU."""
    wanted = set(kernels)
    rows = []
    for doc in docs:
        for rec in doc.bench:
            if not rec.launched or (wanted and rec.kernel not in wanted):
                continue
            gpu = (rec.gpu or {}).get("name") or doc.environment.get("gpu") or "?"
            rows.append(
                LaunchRow(rec.problem.key, rec.problem.m, str(gpu), rec.label, rec.launched)
            )
    reference = {r.label for d in docs for r in d.bench if _is_reference(r)}
    return sorted(rows, key=lambda r: (r.m, r.shape, r.gpu, r.label not in reference, r.label))


def _is_reference(rec: BenchRecord) -> bool:
    return rec.rung == 0


def _name(k: DeviceKernel, width: int) -> str:
    return short_name(k.name, width) + ("" if k.calls == 1 else f" x{k.calls:g}")


def format_launched(rows: list[LaunchRow], width: int = 60) -> str:
    """A table of ``rows``: shape, GPU, kernel, the launch's device time, its main kernel
    (cut to ``width``) with the tile its name states, and the launch's other kernels."""
    if not rows:
        return (
            "no profiled launch in these results: run `python -m harness bench --check-only "
            "--launched` first"
        )
    body = []
    for r in rows:
        others = [k for k in r.kernels if k is not r.main]
        body.append(
            [
                r.shape,
                r.gpu,
                r.label,
                f"{r.us:.1f}",
                _name(r.main, width),
                cublas_tile(r.main.name) or "",
                "; ".join(f"{_name(k, 32)} {k.us:.1f} us" for k in others),
            ]
        )
    header = ["shape", "GPU", "kernel", "us", "main kernel", "its tile (N x M x K)", "others"]
    return text_table(header, body, align="lllrlll")
