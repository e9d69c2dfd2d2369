"""Results documents: the one place records become JSON and back.

A document is ``{"schema": "gemm-dsl-study/results", "schema_version": 3, "kind": "bench" |
"codegen", "created", "environment": {...}, "records": [...]}``. A bench record is one
(kernel, config, problem) — status, error metrics, timing statistics, TFLOPS, % of cuBLAS in
the same run (and per clock), cuBLAS's drift over the problem, the host's launch time and the
hold per launch, telemetry, the GPU it ran on and the versions of its environment (and, from
a profiled run that times nothing, ``launched``: what one launch ran on the device); a codegen
record one kernel compiled for its arch — registers, spills, shared memory, compile time,
lines of code, the PTX features found. Older documents read as far as they go: version 3
files written before 2026-11-27 without launch times and holds (and most of that day's without
the selection's reason), version 2 also without GPU,
versions and drift (None), version 1 also without configs (``config = None``).

:class:`ResultsWriter` rewrites the whole document through a temporary file and ``os.replace``
after every record (or every problem's records, :meth:`ResultsWriter.add_many`), so a run
killed at any moment leaves a complete, valid file holding everything measured so far; it can
also continue a document (``--resume``). :func:`load_many` reads a set of files, naming and
skipping the ones it cannot read, so one bad file never hides the rest.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from harness.gemm import Problem
from harness.records import (
    BenchRecord,
    CheckResult,
    CodegenRecord,
    DeviceKernel,
    Stats,
    Status,
    Telemetry,
)

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "Document",
    "ResultsError",
    "ResultsWriter",
    "Status",
    "load",
    "load_many",
    "to_csv",
]

SCHEMA = "gemm-dsl-study/results"
SCHEMA_VERSION = 3
KINDS = ("bench", "codegen")
Record = BenchRecord | CodegenRecord


class ResultsError(ValueError):
    """A results file that is malformed, of another schema, or of a newer schema version."""


@dataclass(frozen=True)
class Document:
    kind: str
    environment: Mapping[str, Any]
    records: tuple[Record, ...] = ()
    created: str | None = None
    finished: str | None = None
    elapsed_s: float | None = None
    #: Where it was read from (None for a document being written).
    source: str | None = None

    @property
    def bench(self) -> tuple[BenchRecord, ...]:
        return tuple(r for r in self.records if isinstance(r, BenchRecord))

    @property
    def codegen(self) -> tuple[CodegenRecord, ...]:
        return tuple(r for r in self.records if isinstance(r, CodegenRecord))


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


# ------------------------------------------------------------------------------ records -> JSON
def _identity_json(rec: Record) -> dict[str, Any]:
    return {
        "kernel": rec.kernel,
        "backend": rec.backend,
        "name": rec.name,
        "rung": rec.rung,
        "rung_name": rec.rung_name,
        "arch": rec.arch,
        "status": rec.status.value,
        "reason": rec.reason,
        "config": rec.config,
        "config_values": dict(rec.config_values) if rec.config_values is not None else None,
    }


def _plain(obj: Any) -> dict[str, Any] | None:
    return None if obj is None else {f.name: getattr(obj, f.name) for f in fields(obj)}


def record_to_json(rec: Record) -> dict[str, Any]:
    out = _identity_json(rec)
    if isinstance(rec, BenchRecord):
        p = rec.problem
        out.update(
            problem={"m": p.m, "n": p.n, "k": p.k, "dtype": p.dtype},
            problem_key=p.key,
            selected=rec.selected,
            selection=rec.selection,
            compile_s=rec.compile_s,
            check=_plain(rec.check),
            timing=_plain(rec.timing),
            rotation_sets=rec.rotation_sets,
            tflops=rec.tflops,
            tflops_per_ghz=rec.tflops_per_ghz,
            pct_of_cublas=rec.pct_of_cublas,
            per_clock_pct_of_cublas=rec.per_clock_pct_of_cublas,
            cublas_drift_pct=rec.cublas_drift_pct,
            host_launch_ms=rec.host_launch_ms,
            hold_ms_per_launch=rec.hold_ms_per_launch,
            telemetry=_plain(rec.telemetry),
            gpu=dict(rec.gpu) if rec.gpu is not None else None,
            versions=dict(rec.versions) if rec.versions is not None else None,
        )
        if rec.launched is not None:  # only profiled runs carry it (``bench --launched``)
            out["launched"] = [_plain(k) for k in rec.launched]
        if rec.traceback:
            out["traceback"] = rec.traceback
    else:
        out.update(
            registers=rec.registers,
            spill_bytes=rec.spill_bytes,
            shared_bytes=rec.shared_bytes,
            compile_seconds=rec.compile_seconds,
            lines_of_code=rec.lines_of_code,
            features=list(rec.features),
            raw_ptx=list(rec.raw_ptx),
            notes=list(rec.notes),
            ptx_bytes=rec.ptx_bytes,
        )
    return out


# ------------------------------------------------------------------------------ JSON -> records
def _req(d: Mapping[str, Any], key: str, typ: type | tuple[type, ...], where: str) -> Any:
    if key not in d:
        raise ResultsError(f"{where}: missing field {key!r}")
    if not isinstance(d[key], typ):
        raise ResultsError(f"{where}: field {key!r} has the wrong type")
    return d[key]


def _opt(d: Mapping[str, Any], key: str, typ: type | tuple[type, ...], where: str) -> Any:
    value = d.get(key)
    if value is not None and not isinstance(value, typ):
        raise ResultsError(f"{where}: field {key!r} has the wrong type")
    return value


_NUM = (int, float)


def _nested(
    cls: Callable[..., Any], d: Any, where: str, extra: dict[str, Any] | None = None
) -> Any:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise ResultsError(f"{where}: expected an object")
    names = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    try:
        return cls(**{k: v for k, v in d.items() if k in names}, **(extra or {}))
    except TypeError as e:
        raise ResultsError(f"{where}: {e}") from None


def _check_from(d: Any, where: str) -> CheckResult | None:
    if d is None:
        return None
    if not isinstance(d, dict):
        raise ResultsError(f"{where}: check must be an object")
    extra: dict[str, Any] = {}
    if "passed" not in d:  # version 1 did not store it: it follows from the stored metrics
        extra["passed"] = bool(
            d.get("nonfinite") == 0
            and d.get("max_abs_err", 1) <= d.get("atol", 0)
            and d.get("rel_err", 1) <= d.get("rtol", 0)
        )
    faults = _opt(d, "faults", list, f"{where} check")  # absent before the guard band
    d = {k: v for k, v in d.items() if k != "faults"}
    if faults:
        extra["faults"] = tuple(str(f) for f in faults)
    return _nested(CheckResult, d, f"{where} check", extra)


def _launched_from(d: Any, where: str) -> tuple[DeviceKernel, ...] | None:
    if d is None:
        return None
    if not isinstance(d, list):
        raise ResultsError(f"{where}: launched must be a list")
    return tuple(_nested(DeviceKernel, k, f"{where} launched[{i}]") for i, k in enumerate(d))


def record_from_json(d: Any, kind: str, where: str = "record") -> Record:
    if not isinstance(d, dict):
        raise ResultsError(f"{where}: not an object")
    status_text = _req(d, "status", str, where)
    try:
        status = Status(status_text)
    except ValueError:
        raise ResultsError(f"{where}: unknown status {status_text!r}") from None
    ident = {
        "kernel": _req(d, "kernel", str, where),
        "backend": _req(d, "backend", str, where),
        "name": d.get("name") or _req(d, "kernel", str, where).split("/", 1)[-1],
        "rung": _req(d, "rung", int, where),
        "rung_name": d.get("rung_name") or "",
        "arch": _req(d, "arch", str, where),
        "status": status,
        "reason": _opt(d, "reason", str, where),
        "config": _opt(d, "config", str, where),
        "config_values": _opt(d, "config_values", dict, where),
    }
    if kind == "bench":
        p = _req(d, "problem", dict, where)
        try:
            problem = Problem(p["m"], p["n"], p["k"], p["dtype"])
        except (KeyError, ValueError, TypeError) as e:
            raise ResultsError(f"{where}: bad problem ({e})") from None
        return BenchRecord(
            **ident,
            problem=problem,
            selected=_opt(d, "selected", bool, where),
            selection=_opt(d, "selection", str, where),
            compile_s=_opt(d, "compile_s", _NUM, where),
            check=_check_from(d.get("check"), where),
            timing=_nested(Stats, d.get("timing"), f"{where} timing"),
            rotation_sets=_opt(d, "rotation_sets", int, where),
            tflops=_opt(d, "tflops", _NUM, where),
            tflops_per_ghz=_opt(d, "tflops_per_ghz", _NUM, where),
            pct_of_cublas=_opt(d, "pct_of_cublas", _NUM, where),
            per_clock_pct_of_cublas=_opt(d, "per_clock_pct_of_cublas", _NUM, where),
            cublas_drift_pct=_opt(d, "cublas_drift_pct", _NUM, where),
            host_launch_ms=_opt(d, "host_launch_ms", _NUM, where),
            hold_ms_per_launch=_opt(d, "hold_ms_per_launch", _NUM, where),
            telemetry=_nested(Telemetry, d.get("telemetry"), f"{where} telemetry"),
            gpu=_opt(d, "gpu", dict, where),
            versions=_opt(d, "versions", dict, where),
            launched=_launched_from(d.get("launched"), where),
            traceback=_opt(d, "traceback", str, where),
        )
    return CodegenRecord(
        **ident,
        registers=_opt(d, "registers", int, where),
        spill_bytes=_opt(d, "spill_bytes", int, where),
        shared_bytes=_opt(d, "shared_bytes", int, where),
        compile_seconds=_opt(d, "compile_seconds", _NUM, where),
        lines_of_code=_opt(d, "lines_of_code", int, where),
        features=tuple(_opt(d, "features", list, where) or ()),
        raw_ptx=tuple(_opt(d, "raw_ptx", list, where) or ()),
        notes=tuple(_opt(d, "notes", list, where) or ()),
        ptx_bytes=_opt(d, "ptx_bytes", int, where),
    )


# -------------------------------------------------------------------------------- documents
def document_to_json(doc: Document) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": doc.kind,
        "created": doc.created,
        "environment": dict(doc.environment),
        "records": [record_to_json(r) for r in doc.records],
    }
    if doc.finished is not None:
        out["finished"] = doc.finished
        out["elapsed_s"] = doc.elapsed_s
    return out


def document_from_json(raw: Any, source: str = "document") -> Document:
    """Check and convert a loaded document; raise :class:`ResultsError` naming the problem."""
    if not isinstance(raw, dict):
        raise ResultsError(f"{source}: expected a JSON object at the top level")
    if raw.get("schema") != SCHEMA:
        raise ResultsError(
            f"{source}: not a results file (schema {raw.get('schema')!r}, expected {SCHEMA!r})"
        )
    version = raw.get("schema_version")
    if not isinstance(version, int):
        raise ResultsError(f"{source}: schema_version missing or not an integer")
    if version > SCHEMA_VERSION:
        raise ResultsError(
            f"{source}: schema version {version} is newer than this harness understands "
            f"({SCHEMA_VERSION}); update the project to read it"
        )
    kind = raw.get("kind")
    if kind not in KINDS:
        raise ResultsError(f"{source}: kind must be one of {KINDS}, got {kind!r}")
    env = raw.get("environment")
    if not isinstance(env, dict):
        raise ResultsError(f"{source}: environment missing or not an object")
    recs = raw.get("records")
    if not isinstance(recs, list):
        raise ResultsError(f"{source}: records missing or not a list")
    records = tuple(
        record_from_json(
            r,
            kind,
            f"{source}: record {i} ({r.get('kernel', '?') if isinstance(r, dict) else '?'})",
        )
        for i, r in enumerate(recs)
    )
    return Document(
        kind=kind,
        environment=env,
        records=records,
        created=raw.get("created"),
        finished=raw.get("finished"),
        elapsed_s=raw.get("elapsed_s"),
        source=source,
    )


def load(path: str | os.PathLike[str]) -> Document:
    """Read and validate one results file."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{p}: no such results file") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ResultsError(f"{p}: not valid JSON ({e})") from None
    return document_from_json(raw, str(p))


def result_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """The ``*.json`` files named by ``paths`` (files, or folders taken one level deep)."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.glob("*.json"))
        elif p.exists():
            files.append(p)
        else:
            raise ResultsError(f"{p}: no such file or folder")
    return files


def load_many(
    paths: Iterable[str | os.PathLike[str]], warn: Callable[[str], None] = lambda _m: None
) -> list[Document]:
    """Every readable results file under ``paths``, oldest first; each unreadable one (corrupt,
    another schema, a newer version) is named through ``warn`` and skipped."""
    docs = []
    for f in result_files(paths):
        try:
            docs.append(load(f))
        except ResultsError as e:
            warn(f"skipped {e}")
    return sorted(docs, key=lambda d: d.created or "")


# ------------------------------------------------------------------------------------ writing
def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)  # mkstemp's 0600 would hide the file from other users
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path: Path) -> None:
    """Raise ResultsError unless a results file can be written at ``path``.

    Tries it: creates (and removes) a file in the nearest existing folder on the way, because
    permission bits say nothing for root, and a read-only mount or ``/proc`` refuses anyway."""
    if path.is_dir():
        raise ResultsError(f"cannot write results to {path}: it is a folder")
    probe = path.parent
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        raise ResultsError(f"cannot write results to {path}: {probe} is not a folder")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".write-check.", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as e:
        why = e.strerror or type(e).__name__
        raise ResultsError(
            f"cannot write results to {path}: {probe} is not a writable folder ({why})"
        ) from None


@dataclass
class ResultsWriter:
    """Accumulates records and keeps ``path`` a complete document after every ``add``.

    ``resume`` continues ``base`` (a document read from ``path``): its records are kept and
    the new ones follow; ``created`` stays the first session's.
    """

    path: Path
    kind: str
    environment: dict[str, Any]
    base: Document | None = None
    _doc: Document = field(init=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}")
        self.path = Path(self.path)
        if self.base is not None:
            if self.base.kind != self.kind:
                raise ValueError(f"cannot continue a {self.base.kind} document as {self.kind}")
            self._doc = Document(
                self.kind, dict(self.environment), self.base.records, self.base.created or _now()
            )
        else:
            self._doc = Document(self.kind, dict(self.environment), (), _now())
        self._flush()

    @property
    def document(self) -> Document:
        return self._doc

    def add(self, record: Record) -> None:
        self.add_many([record])

    def add_many(self, records: Iterable[Record]) -> None:
        """Add ``records`` with one rewrite: a reader sees all of them or none."""
        want = BenchRecord if self.kind == "bench" else CodegenRecord
        records = tuple(records)
        for record in records:
            if not isinstance(record, want):
                raise TypeError(f"a {self.kind} document holds {want.__name__}s")
        self._doc = replace(self._doc, records=(*self._doc.records, *records))
        self._flush()

    def update_environment(self, **facts: Any) -> None:
        """Add or replace environment entries (what a run learns on the way: its GPUs, the ones
        it quarantined)."""
        self._doc = replace(self._doc, environment={**self._doc.environment, **facts})
        self._flush()

    def finish(self, elapsed_s: float | None = None) -> None:
        self._doc = replace(self._doc, finished=_now(), elapsed_s=elapsed_s)
        self._flush()

    def _flush(self) -> None:
        _atomic_write(self.path, json.dumps(document_to_json(self._doc), indent=1) + "\n")


# ---------------------------------------------------------------------------------------- CSV
_BENCH_COLUMNS = [
    "kernel",
    "backend",
    "rung",
    "rung_name",
    "arch",
    "config",
    "selected",
    "m",
    "n",
    "k",
    "dtype",
    "status",
    "reason",
    "median_ms",
    "p20_ms",
    "p80_ms",
    "cv",
    "samples",
    "tflops",
    "tflops_per_ghz",
    "pct_of_cublas",
    "per_clock_pct_of_cublas",
    "cublas_drift_pct",
    "host_launch_ms",
    "hold_ms_per_launch",
    "max_abs_err",
    "rel_err",
    "sm_clock_mhz_mean",
    "power_w_mean",
    "power_source",
    "temp_c_max",
    "compile_s",
    "host",
    "gpu_uuid",
]
_CODEGEN_COLUMNS = [
    "kernel",
    "backend",
    "rung",
    "rung_name",
    "arch",
    "config",
    "status",
    "reason",
    "registers",
    "spill_bytes",
    "shared_bytes",
    "compile_seconds",
    "lines_of_code",
    "features",
    "raw_ptx",
]


def _flatten(rec: Record) -> dict[str, Any]:
    flat = record_to_json(rec)
    for nested in ("problem", "check", "telemetry"):
        flat.update(flat.get(nested) or {})
    gpu = flat.get("gpu") or {}
    flat.update(host=gpu.get("host"), gpu_uuid=gpu.get("uuid"))
    timing = flat.get("timing") or {}
    flat.update({k: timing.get(k) for k in ("median_ms", "p20_ms", "p80_ms", "cv")})
    flat["samples"] = timing.get("n")
    for key in ("features", "raw_ptx"):
        if isinstance(flat.get(key), list):
            flat[key] = " ".join(flat[key])
    return flat


def to_csv(docs: Iterable[Document]) -> str:
    """CSV text of the records of one or more documents (all of one kind)."""
    docs = list(docs)
    kinds = {d.kind for d in docs}
    if len(kinds) > 1:
        raise ResultsError("cannot mix bench and codegen documents in one CSV")
    columns = _CODEGEN_COLUMNS if kinds == {"codegen"} else _BENCH_COLUMNS
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["run", *columns], extrasaction="ignore")
    w.writeheader()
    for d in docs:
        for rec in d.records:
            w.writerow({"run": d.created, **_flatten(rec)})
    return buf.getvalue()
