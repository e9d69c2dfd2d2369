"""The study's sessions: tests (the default), lint, bench, codegen, report.

Each DSL stack conflicts with the others, so every backend gets its own virtualenv with its DSL
pinned by the matching extra in pyproject.toml; a bench environment adds the ``gpu`` extra (the
CUDA build of torch, NVML) where a GPU is present. ``nox -s bench`` builds each backend's
environment (``bench(<backend>)``) and then makes ONE harness run over all of them
(``bench-run``): each backend's workers run under its own interpreter (``--python``), so cuBLAS
and every DSL are timed round-robin per problem, in one results file. docs/install.md says which
Pythons are needed and how to run on a GPU node without a package index.

Offline hosts run the same sessions against the environment they already have:
``nox --no-venv -s "bench(cutedsl)"`` installs nothing and uses the interpreter nox runs under.
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import json
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
#: tests/network resolves the install sets with ``pip install --dry-run``; before pip 25.3 a dry
#: run downloads every wheel it would install (pypa/pip#12603), about 4 GB of CUDA wheels per set.
RESOLVING_PIP = "pip>=25.3"
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
#: The promoted results every report renders beside a run.
COMMITTED = Path("reports/results")
#: The entry-point group plugin backends declare (harness.protocol.ENTRY_POINT_GROUP).
PLUGIN_GROUP = "gemm_dsl_study.backends"
#: Set in tests(cluster), which installs the [cluster] extra: a missing Ray fails its tests.
EXPECT_RAY = "GEMM_STUDY_EXPECT_RAY"

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


def _test_paths(posargs: list[str], *defaults: str) -> list[str]:
    """The paths pytest runs: ``defaults``, unless the arguments after ``--`` name tests
    themselves (a path or node id under ``tests/``), which then replace them: ``nox -s
    "tests(cutedsl)" -- tests/gpu/test_rung8.py`` runs that file, not the whole part."""
    named = any(a.startswith("tests/") for a in posargs)
    return [] if named else list(defaults)


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
    [
        ("3.11", "harness"),
        ("3.11", "network"),
        ("3.11", "cluster"),
        *[(BACKENDS[b][0], b) for b in DSL_BACKENDS],
    ],
    ids=["harness", "network", "cluster", *DSL_BACKENDS],
)
def tests(session: nox.Session, part: str) -> None:
    """Unit, network, Ray and compile-only tests (no GPU needed); with a GPU also the GPU tests."""
    gpu = _has_gpu()
    pytest = [_python(session), "-m", "pytest"]
    if part == "network":  # the install sets resolved on the index; skipped offline
        _install(session, "test")
        if not _provisioned(session):  # the pip that resolves without downloading the wheels
            session.install(RESOLVING_PIP)
        session.run(*pytest, *_test_paths(session.posargs, "tests/network"), *session.posargs)
        return
    if part == "cluster":  # the Ray executor, on logical GPUs: no GPU needed
        if not gpu:
            _install_cpu_torch(session)  # the CPU build, from its index (never PyPI's CUDA one)
        _install(session, "test,cluster", "gpu" if gpu else "")
        session.run(
            *pytest,
            *_test_paths(session.posargs, "tests/cluster"),
            *session.posargs,
            env={EXPECT_RAY: "1"},
        )
        return
    # What this session installs must import: a DSL that does not fails instead of skipping.
    expect = {EXPECT_DSL: REFERENCE if part == "harness" else part}
    if part == "harness":
        if gpu:  # the CUDA torch of the bench environments, and the reference's GPU tests
            _install(session, "test,gpu")
            session.run(
                *pytest,
                *_test_paths(session.posargs, "tests/unit", "tests/gpu"),
                *("--backend", REFERENCE, *session.posargs),
                env=expect,
            )
            return
        _install_cpu_torch(session)
        _install(session, "test")
        session.run(
            *pytest, *_test_paths(session.posargs, "tests/unit"), *session.posargs, env=expect
        )
        return
    compile_tests = f"tests/compile/test_{part}.py"
    dsl = BACKENDS[part][1]
    if gpu:
        _install(session, "test", dsl, "gpu")
        session.run(
            *pytest,
            *_test_paths(session.posargs, compile_tests, "tests/gpu"),
            *("--backend", part, *session.posargs),
            env=expect,
        )
        return
    _install_cpu(session, part, "test", dsl)  # the kernels compile without a CUDA torch
    session.run(*pytest, *_test_paths(session.posargs, compile_tests), *session.posargs, env=expect)


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    _install(session, "lint")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


#: Where ``bench(<backend>)`` leaves its interpreter for ``bench-run`` (ignored by git).
BENCH_NOTES = Path(__file__).resolve().parent / ".nox" / "bench-python"


def _interpreter_note(backend: str) -> Path:
    return BENCH_NOTES / f"{backend}.json"


@nox.session(default=False)
@nox.parametrize("python,backend", [(py, b) for b, (py, _) in BACKENDS.items()], ids=list(BACKENDS))
def bench(session: nox.Session, backend: str) -> None:
    """Build a backend's bench environment; then ONE run over every backend built (bench-run).

    ``nox -s bench`` builds every backend's virtualenv, then ``bench-run`` benches them all in
    one harness run; ``nox -s "bench(gluon)"`` (or ``nox -s bench -- --backend gluon``) one
    backend, with cuBLAS. Everything after ``--`` goes to ``python -m harness bench`` (default:
    suites smoke, square, ksweep in fp16 and bf16), e.g. ``--gpus all``. Without a GPU the
    run is a compile-only comparison (codegen) and a report of the committed results.
    """
    wanted = _wanted(session, list(BACKENDS))
    if wanted and backend not in wanted:
        session.skip(f"not selected (--backend {backend} not given)")
    python = None  # the reference, and every backend under --no-venv: bench-run's interpreter
    if backend != REFERENCE and not _provisioned(session):
        if _has_gpu():
            _install(session, BACKENDS[backend][1], BENCH_EXTRAS)
        else:  # compiled only: no CUDA torch
            _install_cpu(session, backend, BACKENDS[backend][1])
        python = str(Path(session.virtualenv.location) / "bin" / "python")
    note = _interpreter_note(backend)
    note.parent.mkdir(parents=True, exist_ok=True)
    # The nox process's id marks the notes of this invocation: bench-run ignores older ones.
    note.write_text(json.dumps({"python": python, "nox_pid": os.getpid()}))
    session.notify("bench-run")


@nox.session(name="bench-run", python="3.11", default=False)
def bench_run(session: nox.Session) -> None:
    """The one harness run of ``nox -s bench``: cuBLAS here, each DSL under its own venv."""
    posargs = list(session.posargs)
    given = {v.split("=", 1)[0] for v in _option(posargs, "--python")[0]}
    built: dict[str, str | None] = {}  # the backends bench(<backend>) prepared in this nox run
    for backend in BACKENDS:
        note = _interpreter_note(backend)
        if note.exists() and (made := json.loads(note.read_text()))["nox_pid"] == os.getpid():
            built[backend] = made["python"]
    if not built:
        session.error('nothing to bench: run `nox -s bench` (or `nox -s "bench(gluon)"`)')
    pythons = [f"--python={b}={p}" for b, p in built.items() if p and b not in given]
    dsls = [b for b in built if b != REFERENCE]
    selected = _option(posargs, "--backend")[0] or _option(posargs, "--kernel")[0]
    selection = [] if selected else [a for b in built for a in ("--backend", b)]
    name = "-".join(built) if len(built) < len(BACKENDS) else "all"
    py = _python(session)
    report_dir = RUNS / f"report-{name}"
    if not _has_gpu():
        _install(session, "report")  # nothing runs here: no torch
        session.log(
            "No NVIDIA GPU on this machine (nvidia-smi -L lists none): nothing can be timed "
            "here. Running the compile-only comparison and rendering the committed results."
        )
        if dsls:
            codegen_file = RUNS / f"codegen-{name}-{_stamp()}.json"
            selection = [a for b in dsls for a in ("--backend", b)]
            envs = [f"{f}={v}" for f in ("--python", "--env") for v in _option(posargs, f)[0]]
            session.run(
                py, "-m", "harness", "codegen", *selection, *pythons, *envs,
                "--out", str(codegen_file),
            )  # fmt: skip
            session.log(f"codegen results: {codegen_file}")
        session.run(py, "-m", "reports", "--out", str(report_dir))
        session.log(f"report of the committed results: {report_dir}/")
        return
    _install(session, BENCH_EXTRAS)  # the harness and the cuBLAS reference
    run_file, args = _run_file(posargs, name)
    if not _option(args, "--suite")[0]:
        args += BENCH_SUITES + ([] if _option(args, "--dtype")[0] else BENCH_DTYPES)
    session.run(py, "-m", "harness", "bench", *selection, *pythons, *args, "--out", str(run_file))
    sources = _report_sources(COMMITTED, run_file)
    session.run(py, "-m", "reports", *sources, "--out", str(report_dir))
    session.log(
        f"results: {run_file}; report ({' + '.join(sources)}): {report_dir}/. "
        f"To add the run to the committed results: python -m reports promote {run_file}"
    )


def _report_sources(committed: Path, run_file: Path) -> list[str]:
    """What a bench's report renders: the committed results beside the run, or the run alone
    in a checkout without them (a trimmed copy on a GPU node), rather than failing the
    session after the bench has finished."""
    return [str(committed), str(run_file)] if committed.is_dir() else [str(run_file)]


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
    for folder in sorted(p for p in COMMITTED.iterdir() if p.is_dir()):
        if folder.name != "archive":
            out = Path("reports/latest") / folder.name
            session.run(_python(session), "-m", "reports", str(folder), "--out", str(out))
            # How each kernel moves from the main folder's GPU to this one, against cuBLAS
            # (exit 2 with one line when the two share no config at a shape: nothing to show).
            gpus = ("gpus", "reports/results", str(folder), "--out", str(out / "gpus.md"))
            session.run(_python(session), "-m", "reports", *gpus, success_codes=[0, 2])
    # The README's rung-8 standing: every GPU model's folder, the main one's rows first.
    others = sorted(p for p in COMMITTED.iterdir() if p.is_dir() and p.name != "archive")
    folders = [str(COMMITTED), *map(str, others)]
    session.run(_python(session), "-m", "reports", "standing", *folders, "--readme", "README.md")
