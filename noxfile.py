"""The study's sessions: tests (the default), lint, bench, codegen, report.

Each DSL stack conflicts with the others, so every backend gets its own virtualenv with its DSL
pinned by the matching extra in pyproject.toml; a bench environment adds the ``gpu`` extra (the
CUDA build of torch, NVML) where a GPU is present. docs/install.md says which Pythons are needed
and how to run on a GPU node without a package index.

Offline hosts run the same sessions against the environment they already have:
``nox --no-venv -s "bench(cutedsl)"`` installs nothing and uses the interpreter nox runs under.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2024.3.2"
nox.options.sessions = ["tests"]
nox.options.reuse_venv = "yes"
# A backend whose Python is missing fails instead of being skipped: a green run means every
# backend ran.
nox.options.error_on_missing_interpreters = True

#: The CPU build of torch, for sessions where nothing runs on a GPU (the harness unit tests, a DSL
#: that depends on torch compiling only). The ``+cpu`` local version exists only on the PyTorch
#: CPU index (and its mirrors and wheelhouses), never on PyPI, so pip cannot satisfy it with
#: PyPI's CUDA build and its GBs of CUDA wheels: without the index it fails instead.
CPU_TORCH = "torch==2.13.0+cpu"
#: Where the CPU build comes from, added to pip's own sources. ``GEMM_STUDY_TORCH_INDEX`` names a
#: mirror instead, or, set empty, says that pip's own sources (a wheelhouse in PIP_FIND_LINKS)
#: hold the wheel.
CPU_TORCH_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_INDEX_VAR = "GEMM_STUDY_TORCH_INDEX"

#: backend -> (python, extras): the Python its DSL needs and the pyproject extras holding its DSL
#: pins. A bench environment is ``.[<extras>,<BENCH_EXTRAS>]``. tests/network/test_install_sets.py
#: reads both tables (keep them literals) and resolves every bench environment against PyPI.
BACKENDS: dict[str, tuple[str, str]] = {
    "cublas": ("3.11", ""),  # the reference (torch.matmul): no DSL
    "cutedsl": ("3.11", "cutedsl"),
    "gluon": ("3.12", "gluon"),  # triton 3.9.0 ships only a cp312-abi3 wheel
    "tilus": ("3.11", "tilus"),  # pure Python; 3.11 so that CI gets the CPU torch it depends on
    "tirx": ("3.11", "tirx"),
}
#: Backends whose DSL itself depends on torch: without a GPU their venvs get the CPU build first,
#: so that pip never fetches a CUDA torch where nothing runs.
DSL_NEEDS_TORCH = {"tilus"}
#: Extras every bench environment adds: the CUDA torch + NVML (`gpu`), matplotlib (`report`).
BENCH_EXTRAS = "gpu,report"
#: The reference backend: no code of ours to compile, so no compile tests and no codegen.
REFERENCE = "cublas"
#: Suites and dtypes `nox -s bench` adds when no --suite is passed through.
BENCH_SUITES = ["--suite", "smoke", "--suite", "square", "--suite", "ksweep"]
BENCH_DTYPES = ["--dtype", "fp16", "--dtype", "bf16"]
#: The variable naming the DSL a tests session installs: its compile and GPU tests then fail,
#: rather than skip, when that DSL does not import (tests/expectations.py).
EXPECT_DSL = "GEMM_STUDY_EXPECT_DSL"
#: Where bench and codegen write (ignored by git); `python -m reports promote` curates.
RUNS = Path("runs")
#: The entry-point group plugin backends declare (harness.protocol.ENTRY_POINT_GROUP).
PLUGIN_GROUP = "gemm_dsl_study.backends"

DSL_BACKENDS = [b for b in BACKENDS if b != REFERENCE]


def _provisioned(session: nox.Session) -> bool:
    """True under --no-venv: use what the host has, install nothing."""
    return session.venv_backend == "none"


def _python(session: nox.Session) -> str:
    """The interpreter to run: the session venv's, or nox's own under --no-venv (offline hosts
    may have only ``python3``)."""
    return sys.executable if _provisioned(session) else "python"


def _extras(*parts: str) -> str:
    """``.[a,b]`` from comma-separated extras lists (empty ones dropped)."""
    names = [e for p in parts for e in p.split(",") if e]
    return f".[{','.join(names)}]" if names else "."


def _install(session: nox.Session, *parts: str) -> None:
    """Install the project editable with these extras, unless under --no-venv."""
    if not _provisioned(session):
        session.install("-e", _extras(*parts))


def _install_cpu_torch(session: nox.Session) -> None:
    """The CPU build of torch from the PyTorch CPU index (see CPU_TORCH), unless --no-venv."""
    if _provisioned(session):
        return
    index = os.environ.get(TORCH_INDEX_VAR, CPU_TORCH_INDEX)
    session.install(CPU_TORCH, *(["--extra-index-url", index] if index else []))


def _install_cpu(session: nox.Session, backend: str, *parts: str) -> None:
    """Install for compiling only: a DSL that depends on torch gets the CPU build first."""
    if backend in DSL_NEEDS_TORCH:
        _install_cpu_torch(session)
    _install(session, *parts)


@functools.cache
def _has_gpu() -> bool:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    r = subprocess.run([smi, "-L"], capture_output=True, text=True, check=False)
    return r.returncode == 0 and "GPU" in r.stdout


def _stamp() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def _option(args: list[str], flag: str) -> tuple[list[str], list[str]]:
    """(values of ``flag``, the other args); accepts ``--flag X`` and ``--flag=X``."""
    values: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == flag and i + 1 < len(args):
            values.append(args[i + 1])
            i += 2
            continue
        if a.startswith(flag + "="):
            values.append(a[len(flag) + 1 :])
        else:
            rest.append(a)
        i += 1
    return values, rest


def _installed_plugins() -> set[str]:
    """Plugin backends visible to the interpreter nox runs under (not to a session's venv)."""
    try:
        return {ep.name for ep in importlib.metadata.entry_points(group=PLUGIN_GROUP)}
    except Exception:  # a broken distribution must not break the noxfile
        return set()


def _wanted(session: nox.Session, known: list[str]) -> list[str]:
    """The backends ``--backend`` (else ``--kernel``) names in the posargs (empty: all); an
    unknown one is an error naming the valid ones and, for a plugin backend, how to bench it."""
    wanted, _ = _option(list(session.posargs), "--backend")
    if not wanted:  # --kernel gluon/sm90/r7_multi_consumer selects its backend
        kernels, _ = _option(list(session.posargs), "--kernel")
        wanted = list(dict.fromkeys(k.split("/")[0] for k in kernels))
    for name in wanted:
        if name in known:
            continue
        if name in BACKENDS:  # the reference, named to a session that has nothing to do for it
            session.error(f"`nox -s {session.name.split('(')[0]}` has nothing to do for {name}")
        where = (
            f"{name!r} is a plugin backend installed in this environment"
            if name in _installed_plugins()
            else f"unknown backend {name!r}"
        )
        session.error(
            f"{where}; `nox -s {session.name.split('(')[0]}` knows {', '.join(known)} "
            "(BACKENDS in noxfile.py). A plugin backend is benched in one environment holding "
            f"this project and the plugin (`pip install -e . <plugin>`): run `python -m harness "
            f"bench --backend {name}` there (see docs/install.md)"
        )
    return wanted


def _run_file(args: list[str], backend: str) -> tuple[Path, list[str]]:
    """The bench results file (``--out`` if it names a .json, else a fresh name in ``--out``'s
    folder or in runs/) and the args without ``--out``."""
    outs, rest = _option(args, "--out")
    out = Path(outs[-1]) if outs else RUNS
    if out.suffix != ".json":
        out = out / f"bench-{backend}-{_stamp()}.json"
    return out, rest


@nox.session(name="tests")
@nox.parametrize(
    "python,part",
    [("3.11", "harness"), ("3.11", "network"), *[(BACKENDS[b][0], b) for b in DSL_BACKENDS]],
    ids=["harness", "network", *DSL_BACKENDS],
)
def tests(session: nox.Session, part: str) -> None:
    """Unit, network and compile-only tests (no GPU needed); with a GPU also the GPU tests."""
    gpu = _has_gpu()
    pytest = [_python(session), "-m", "pytest"]
    if part == "network":  # the install sets resolved on the index; skipped offline
        _install(session, "test")
        session.run(*pytest, "tests/network", *session.posargs)
        return
    # What this session installs must import: a DSL that does not fails instead of skipping.
    expect = {EXPECT_DSL: REFERENCE if part == "harness" else part}
    if part == "harness":
        if gpu:  # the CUDA torch of the bench environments, and the reference's GPU tests
            _install(session, "test,gpu")
            session.run(
                *pytest,
                *("tests/unit", "tests/gpu", "--backend", REFERENCE, *session.posargs),
                env=expect,
            )
            return
        _install_cpu_torch(session)
        _install(session, "test")
        session.run(*pytest, "tests/unit", *session.posargs, env=expect)
        return
    compile_tests = f"tests/compile/test_{part}.py"
    dsl = BACKENDS[part][1]
    if gpu:
        _install(session, "test", dsl, "gpu")
        session.run(
            *pytest, compile_tests, "tests/gpu", "--backend", part, *session.posargs, env=expect
        )
        return
    _install_cpu(session, part, "test", dsl)  # the kernels compile without a CUDA torch
    session.run(*pytest, compile_tests, *session.posargs, env=expect)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    _install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(default=False)
@nox.parametrize("python,backend", [(py, b) for b, (py, _) in BACKENDS.items()], ids=list(BACKENDS))
def bench(session: nox.Session, backend: str) -> None:
    """Check and time a backend against cuBLAS (GPU) into runs/; without a GPU: codegen, report.

    Everything after ``--`` goes to ``python -m harness bench`` (default: suites smoke, square,
    ksweep in fp16 and bf16). ``--backend X`` picks the backends; the others skip. The run file
    lands in runs/ (ignored by git) and is rendered with the committed results into
    runs/report-<backend>/; a run enters reports/results only when promoted:
    ``python -m reports promote runs/bench-<backend>-<stamp>.json``.
    """
    wanted = _wanted(session, list(BACKENDS))
    if wanted and backend not in wanted:
        session.skip(f"not selected (--backend {backend} not given)")
    py = _python(session)
    report_dir = RUNS / f"report-{backend}"
    if not _has_gpu():
        _install_cpu(session, backend, BACKENDS[backend][1], "report")  # nothing runs here
        session.log(
            "No NVIDIA GPU on this machine (nvidia-smi -L lists none): nothing can be timed "
            "here. Running the compile-only comparison and rendering the committed results."
        )
        made = []
        if backend != REFERENCE:  # the reference library has no code of ours to compile
            codegen_file = RUNS / f"codegen-{backend}-{_stamp()}.json"
            session.run(
                py, "-m", "harness", "codegen", "--backend", backend, "--out", str(codegen_file)
            )
            made.append(f"codegen results: {codegen_file}")
        session.run(py, "-m", "reports", "--out", str(report_dir))
        made.append(f"report of the committed results: {report_dir}/")
        session.log("; ".join(made))
        return
    _install(session, BACKENDS[backend][1], BENCH_EXTRAS)
    run_file, args = _run_file(list(session.posargs), backend)
    if not _provisioned(session):
        # A venv holds only this backend's DSL: bench that one. Under --no-venv every backend
        # named runs in this one run (the host's environment may hold them all).
        args = _option(args, "--backend")[1]
    if "--backend" not in args and not any(a.startswith("--backend=") for a in args):
        args += ["--backend", backend]
    if not _option(args, "--suite")[0]:
        args += BENCH_SUITES + ([] if _option(args, "--dtype")[0] else BENCH_DTYPES)
    session.run(py, "-m", "harness", "bench", *args, "--out", str(run_file))
    session.run(py, "-m", "reports", "reports/results", str(run_file), "--out", str(report_dir))
    session.log(
        f"results: {run_file}; report (committed results + this run): {report_dir}/. "
        f"To add the run to the committed results: python -m reports promote {run_file}"
    )


@nox.session(default=False)
@nox.parametrize("python,backend", [(BACKENDS[b][0], b) for b in DSL_BACKENDS], ids=DSL_BACKENDS)
def codegen(session: nox.Session, backend: str) -> None:
    """Compile every kernel of a backend without a GPU; results into runs/ (no GPU needed)."""
    wanted = _wanted(session, DSL_BACKENDS)
    if wanted and backend not in wanted:
        session.skip(f"not selected (--backend {backend} not given)")
    _install_cpu(session, backend, BACKENDS[backend][1])
    args = _option(list(session.posargs), "--backend")[1]
    session.run(_python(session), "-m", "harness", "codegen", "--backend", backend, *args)


@nox.session(python="3.11", default=False)
def report(session: nox.Session) -> None:
    """Re-render reports/latest and the READMEs' tables from reports/results (changes the tree)."""
    _install(session, "report")
    readmes = ["README.md", *(str(p) for p in sorted(Path("backends").glob("*/README.md")))]
    args = [a for r in readmes for a in ("--readme", r)]
    session.run(_python(session), "-m", "reports", *args, *session.posargs)
    # Results of another GPU model live in their own folder and report (one GPU per report: a
    # ratio compares kernels of one run on one GPU).
    for folder in sorted(p for p in Path("reports/results").iterdir() if p.is_dir()):
        if folder.name != "archive":
            out = Path("reports/latest") / folder.name
            session.run(_python(session), "-m", "reports", str(folder), "--out", str(out))
