"""Results documents: a versioned JSON schema, atomic incremental writes, validated reads, CSV.

A document is ``{"schema": "gemm-dsl-study/results", "schema_version": 1, "kind": "bench" |
"codegen", "created", "environment": {...}, "records": [...]}``. A bench record is one
(kernel, problem) with its status, error metrics, timing statistics, TFLOPS, % of cuBLAS in the
same run and telemetry; a codegen record is one (kernel, arch) with registers, spills, shared
memory, compile time, lines of code and the PTX features found. Absent numbers are ``null``.

:class:`ResultsWriter` rewrites the whole document through a temporary file and ``os.replace``
after every record, so a run killed at any moment leaves a complete, valid file holding every
record measured so far.
"""

from __future__ import annotations

import csv
import datetime as _dt
import enum
import io
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "ResultsError",
    "ResultsWriter",
    "Status",
    "load",
    "to_csv",
]

SCHEMA = "gemm-dsl-study/results"
SCHEMA_VERSION = 1
KINDS = ("bench", "codegen")


class Status(enum.StrEnum):
    OK = "ok"
    UNSUPPORTED = "unsupported"
    WRONG = "wrong"
    ERROR = "error"
    TIMEOUT = "timeout"


class ResultsError(ValueError):
    """A results file that is malformed, of another schema, or of a newer schema version."""


_BENCH_REQUIRED = {
    "kernel": str,
    "backend": str,
    "rung": int,
    "arch": str,
    "problem": dict,
    "status": str,
}
_CODEGEN_REQUIRED = {"kernel": str, "backend": str, "rung": int, "arch": str, "status": str}


def kernel_fields(spec: Any) -> dict[str, Any]:
    """The identity fields every record starts with, from a :class:`KernelSpec`."""
    return {
        "kernel": spec.id,
        "backend": spec.backend,
        "name": spec.name,
        "rung": int(spec.rung),
        "rung_name": spec.rung.label,
        "arch": spec.arch,
    }


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def new_document(kind: str, environment: dict[str, Any]) -> dict[str, Any]:
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}")
    return {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "kind": kind,
        "created": _now(),
        "environment": environment,
        "records": [],
    }


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class ResultsWriter:
    """Accumulates records and keeps ``path`` a complete document after every ``add``."""

    def __init__(self, path: str | os.PathLike[str], kind: str, environment: dict[str, Any]):
        self.path = Path(path)
        self.doc = new_document(kind, environment)
        self._flush()

    def update_environment(self, **fields: Any) -> None:
        self.doc["environment"].update(fields)
        self._flush()

    def add(self, record: dict[str, Any]) -> None:
        validate_record(record, self.doc["kind"])
        self.doc["records"].append(record)
        self._flush()

    def finish(self, **fields: Any) -> None:
        self.doc["finished"] = _now()
        self.doc.update(fields)
        self._flush()

    def _flush(self) -> None:
        _atomic_write(self.path, json.dumps(self.doc, indent=1, default=_json_default) + "\n")


def _json_default(obj: Any) -> Any:
    if isinstance(obj, enum.Enum):
        return obj.value
    raise TypeError(f"not JSON serializable: {type(obj).__name__}")


def validate_record(record: dict[str, Any], kind: str, where: str = "record") -> None:
    required = _BENCH_REQUIRED if kind == "bench" else _CODEGEN_REQUIRED
    for key, typ in required.items():
        if key not in record:
            raise ResultsError(f"{where}: missing field {key!r}")
        if not isinstance(record[key], typ):
            raise ResultsError(f"{where}: field {key!r} should be {typ.__name__}")
    status = record["status"]
    if status not in {s.value for s in Status}:
        raise ResultsError(f"{where}: unknown status {status!r}")
    if kind == "bench":
        p = record["problem"]
        for key in ("m", "n", "k", "dtype"):
            if key not in p:
                raise ResultsError(f"{where}: problem lacks {key!r}")
        if status == Status.OK.value and not isinstance(record.get("timing"), (dict, type(None))):
            raise ResultsError(f"{where}: timing must be an object or null")


def validate(doc: Any, source: str = "document") -> dict[str, Any]:
    """Check a loaded document; raise :class:`ResultsError` with a clear message."""
    if not isinstance(doc, dict):
        raise ResultsError(f"{source}: expected a JSON object at the top level")
    if doc.get("schema") != SCHEMA:
        raise ResultsError(
            f"{source}: not a results file (schema {doc.get('schema')!r}, expected {SCHEMA!r})"
        )
    version = doc.get("schema_version")
    if not isinstance(version, int):
        raise ResultsError(f"{source}: schema_version missing or not an integer")
    if version > SCHEMA_VERSION:
        raise ResultsError(
            f"{source}: schema version {version} is newer than this harness understands "
            f"({SCHEMA_VERSION}); update the project to read it"
        )
    if doc.get("kind") not in KINDS:
        raise ResultsError(f"{source}: kind must be one of {KINDS}, got {doc.get('kind')!r}")
    if not isinstance(doc.get("environment"), dict):
        raise ResultsError(f"{source}: environment missing or not an object")
    records = doc.get("records")
    if not isinstance(records, list):
        raise ResultsError(f"{source}: records missing or not a list")
    for i, rec in enumerate(records):
        if not isinstance(rec, dict):
            raise ResultsError(f"{source}: record {i} is not an object")
        validate_record(rec, doc["kind"], f"{source}: record {i} ({rec.get('kernel', '?')})")
    return doc


def load(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read and validate one results file."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise ResultsError(f"{p}: no such results file") from None
    except json.JSONDecodeError as e:
        raise ResultsError(f"{p}: not valid JSON ({e})") from None
    return validate(doc, str(p))


_BENCH_COLUMNS = [
    "kernel",
    "backend",
    "rung",
    "rung_name",
    "arch",
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
    "max_abs_err",
    "rel_err",
    "sm_clock_mhz_mean",
    "power_w_mean",
    "temp_c_max",
    "compile_s",
]
_CODEGEN_COLUMNS = [
    "kernel",
    "backend",
    "rung",
    "rung_name",
    "arch",
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


def _flatten(rec: dict[str, Any]) -> dict[str, Any]:
    flat = dict(rec)
    for nested in ("problem", "check", "telemetry"):
        flat.update(rec.get(nested) or {})
    timing = rec.get("timing") or {}
    flat.update({k: timing.get(k) for k in ("median_ms", "p20_ms", "p80_ms", "cv")})
    flat["samples"] = timing.get("n")
    for key in ("features", "raw_ptx"):
        if isinstance(flat.get(key), (list, tuple)):
            flat[key] = " ".join(flat[key])
    return flat


def to_csv(docs: Iterable[dict[str, Any]]) -> str:
    """CSV text of the records of one or more documents (all of one kind)."""
    docs = list(docs)
    kinds = {d["kind"] for d in docs}
    if len(kinds) > 1:
        raise ResultsError("cannot mix bench and codegen documents in one CSV")
    columns = _CODEGEN_COLUMNS if kinds == {"codegen"} else _BENCH_COLUMNS
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=["run", *columns], extrasaction="ignore")
    w.writeheader()
    for d in docs:
        for rec in d["records"]:
            w.writerow({"run": d.get("created"), **_flatten(rec)})
    return buf.getvalue()
