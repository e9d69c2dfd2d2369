"""Sessions: tests (default), lint, bench, codegen, report.

Each DSL stack conflicts with the others (Triton pins vs torch, apache-tvm-ffi pins), so every
backend gets its own virtualenv with its DSL pinned by the matching extra in pyproject.toml.

Offline GPU hosts (no package index) run the same sessions against the environment they
already have: ``nox --no-venv -s bench -- --backend cutedsl`` (or ``--force-venv-backend none``)
skips every install and uses the interpreter nox runs under.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2024.3.2"
nox.options.sessions = ["tests"]
nox.options.reuse_venv = "yes"

#: The CPU build of torch the unit tests use; any other spec would download a CUDA build.
CPU_TORCH = "torch==2.13.0"

#: backend -> (python, extras). The built-in reference plus one entry per DSL backend.
BACKENDS: dict[str, tuple[str, str]] = {
    "cublas": ("3.11", "gpu,report"),
    "cutedsl": ("3.11", "cutedsl,gpu,report"),
    "gluon": ("3.12", "gluon,gpu,report"),  # triton 3.9.0 ships only a cp312-abi3 wheel
}
#: Default suites for `nox -s bench` when no --suite is passed through.
BENCH_DEFAULT = [
    "--suite",
    "smoke",
    "--suite",
    "square",
    "--suite",
    "ksweep",
    "--dtype",
    "fp16",
    "--dtype",
    "bf16",
]


def _provisioned(session: nox.Session) -> bool:
    """True under --no-venv: use what the host has, install nothing."""
    return session.venv_backend == "none"


def _python(session: nox.Session) -> str:
    """The interpreter to run: the session venv's, or nox's own under --no-venv (offline hosts
    may have only ``python3``)."""
    return sys.executable if _provisioned(session) else "python"


def _has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    r = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
    return r.returncode == 0 and "GPU" in r.stdout


def _selected(session: nox.Session, backend: str) -> bool:
    """`nox -s bench -- --backend X` runs only X's session; the others skip."""
    args = session.posargs
    wanted = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--backend"]
    return not wanted or backend in wanted


def _codegen(session: nox.Session, backend: str) -> None:
    """Compile a backend's kernels without a GPU into reports/results/codegen-<backend>.json."""
    out = f"reports/results/codegen-{backend}.json"
    session.run(_python(session), "-m", "harness", "codegen", "--backend", backend, "--out", out)


def _backend_args(session: nox.Session, backend: str) -> list[str]:
    args = list(session.posargs)
    if "--backend" not in args:
        args += ["--backend", backend]
    return args


@nox.session(name="tests")
@nox.parametrize(
    "python,part",
    [("3.11", "harness"), *[(py, b) for b, (py, _) in BACKENDS.items() if b != "cublas"]],
    ids=["harness", *[b for b in BACKENDS if b != "cublas"]],
)
def tests(session: nox.Session, part: str) -> None:
    """Unit, compile-only and (with a GPU) GPU tests; each DSL in its own environment."""
    if part == "harness":
        if not _provisioned(session):
            session.install(CPU_TORCH)
            session.install("-e", ".[test]")
        session.run(_python(session), "-m", "pytest", "tests/unit", "tests/gpu", *session.posargs)
        return
    _, extras = BACKENDS[part]
    if not _provisioned(session):
        session.install("-e", f".[test,{extras}]")
    session.run(_python(session), "-m", "pytest", f"tests/compile/test_{part}.py", *session.posargs)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff check and format check."""
    if not _provisioned(session):
        session.install("-e", ".[lint]")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(default=False, venv_params=["--system-site-packages"])
@nox.parametrize("python,backend", [(py, b) for b, (py, _) in BACKENDS.items()], ids=list(BACKENDS))
def bench(session: nox.Session, backend: str) -> None:
    """Check and time a backend against cuBLAS (GPU); without a GPU: codegen + re-render."""
    if not _selected(session, backend):
        session.skip(f"not selected (--backend {backend} not given)")
    if not _provisioned(session):
        session.install("-e", f".[{BACKENDS[backend][1]}]")
    if not _has_gpu():
        session.log(
            "No NVIDIA GPU on this machine: nothing can be timed here. Running the "
            "compile-only comparison and re-rendering the committed results instead."
        )
        if backend != "cublas":  # the reference library has no code of ours to compile
            _codegen(session, backend)
        session.run(_python(session), "-m", "harness", "report")
        return
    args = _backend_args(session, backend)
    if "--suite" not in args:
        args += BENCH_DEFAULT
    session.run(_python(session), "-m", "harness", "bench", *args)
    # Render the committed results together with this run's file (wherever --out put it).
    sources = [a for a in ["reports/results"] if Path(a).is_dir()]
    sources += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--out"]
    session.run(_python(session), "-m", "harness", "report", *sources)


@nox.session(default=False)
@nox.parametrize(
    "python,backend",
    [(py, b) for b, (py, _) in BACKENDS.items() if b != "cublas"],
    ids=[b for b in BACKENDS if b != "cublas"],
)
def codegen(session: nox.Session, backend: str) -> None:
    """Compile every kernel of a backend without a GPU; write reports/results/codegen-*.json."""
    if not _selected(session, backend):
        session.skip(f"not selected (--backend {backend} not given)")
    if not _provisioned(session):
        session.install("-e", f".[{BACKENDS[backend][1]}]")
    _codegen(session, backend)


@nox.session(python="3.11", default=False)
def report(session: nox.Session) -> None:
    """Re-render reports/latest from the committed result files."""
    if not _provisioned(session):
        session.install("-e", ".[report]")
    session.run(
        _python(session), "-m", "harness", "report", "--readme", "README.md", *session.posargs
    )
