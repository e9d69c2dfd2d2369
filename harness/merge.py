"""Runs in pieces: shards of a run (``--shard I/N``), a run continued after it was killed
(``--resume``), and shard files merged into one document (``python -m harness merge``).

A run's *plan* is its list of units (one problem each, in suite order) and what it runs on them
(kernels, configs, timer settings: :data:`PLAN_KEYS`); the environment records it under
``run``. A unit's records are written together (:meth:`ResultsWriter.add_many`), so a unit
whose problem has records in a file is finished: a resumed run skips it, and a merge takes it
from the one file that has it. Pieces of different plans, code (git SHA) or GPU models do not
mix unless told to (``--allow-mixed``): one document compares kernels measured alike.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from harness.gemm import Problem
from harness.results import Document
from harness.runner import Unit

__all__ = [
    "PLAN_KEYS",
    "MergeError",
    "finished_units",
    "merge_documents",
    "parse_shard",
    "plan_differences",
    "plan_units",
    "resume_problem",
]

#: The entries of ``environment["run"]`` that make two pieces parts of one run. Not among them:
#: the GPUs, the executor, the shard (what differs between the pieces of one run).
PLAN_KEYS = (
    "kernels",
    "units",
    "device",
    "configs",
    "tune",
    "tune_top",
    "checks",
    "check_only",
    "launched",
)


class MergeError(ValueError):
    """Pieces that do not make one run: the message names the first reason."""


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` -> (I, N): the I-th of N shards (0 <= I < N), as job arrays number tasks."""
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard {text!r}: expected I/N, e.g. 0/4 (shards 0 to N-1)") from None
    if n < 1 or not 0 <= i < n:
        raise ValueError(f"--shard {text!r}: I must be in 0..N-1 and N >= 1")
    return i, n


def plan_units(problems: Sequence[Problem], shard: tuple[int, int] | None = None) -> list[Unit]:
    """The units of ``problems`` (numbered in plan order), only shard I of N's with ``shard``:
    every N-th unit from the I-th, so each shard gets a like mix of sizes."""
    units = [Unit(i, p) for i, p in enumerate(problems)]
    if shard is None:
        return units
    i, n = shard
    return [u for u in units if u.index % n == i]


def finished_units(doc: Document) -> set[str]:
    """Problem keys of the units a document holds (written together, so each is complete)."""
    return {r.problem_key for r in doc.bench}


def plan_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What differs between two environments' plans (:data:`PLAN_KEYS` and the timer)."""
    ra, rb = a.get("run") or {}, b.get("run") or {}
    diffs = [k for k in PLAN_KEYS if ra.get(k) != rb.get(k)]
    if a.get("timer") != b.get("timer"):
        diffs.append("timer")
    return diffs


def resume_problem(
    doc: Document, environment: Mapping[str, Any], same_code: bool = True
) -> str | None:
    """Why ``doc`` cannot be continued by a run of ``environment`` (None: it can); with
    ``same_code`` False, by a run of other code into another file (``bench --rest-of``)."""
    if doc.kind != "bench":
        return f"{doc.source} is a {doc.kind} document, not a bench run"
    diffs = plan_differences(doc.environment, environment)
    if diffs:
        old_timer = doc.environment.get("timer") or {}
        new_timer = environment.get("timer") or {}
        hint = ""
        if not old_timer.get("count_hold") and new_timer.get("count_hold"):
            # Timer v6 became the default on 2026-12-04; a v5 run continues under v5.
            hint = " (it ran timer v5: add --no-count-hold to continue it)"
        return f"{doc.source} was run with other {', '.join(diffs)}{hint}; start a new file"
    old = (doc.environment.get("run") or {}).get("shard")
    new = (environment.get("run") or {}).get("shard")
    if old != new:
        return f"{doc.source} is shard {old}, this run shard {new}"
    if same_code and doc.environment.get("git_sha") != environment.get("git_sha"):
        return (
            f"{doc.source} was measured with code {doc.environment.get('git_sha')}, this is "
            f"{environment.get('git_sha')}; if the kernels measured did not change, run the rest "
            f"into a new file (`--rest-of {doc.source} --out NEW.json`, no --resume) and join the "
            f"two with `python -m harness merge --allow-mixed {doc.source} NEW.json`"
        )
    return None


def _gpu_models(doc: Document) -> set[str]:
    names = {r.gpu.get("name") for r in doc.bench if r.gpu and r.gpu.get("name")}
    gpu = doc.environment.get("gpu")
    return names | ({gpu} if isinstance(gpu, str) else set())


def _gpus(docs: Iterable[Document]) -> list[Any]:
    out: dict[str, Any] = {}
    for d in docs:
        for g in d.environment.get("gpus") or []:
            out.setdefault(repr((g.get("host"), g.get("uuid") or g.get("visible"))), g)
    return list(out.values())


#: The list entries of ``environment["run"]`` a merge of pieces of different plans joins: a
#: piece's suites in particular must survive, since a held-out suite among them is what keeps
#: the merged document out of every fit (``harness.tune.tuning_docs``).
JOINED_RUN_LISTS = ("suites", "dtypes", "kernels", "configs", "units")


def _joined_plans(docs: Sequence[Document]) -> dict[str, list[Any]]:
    """Each of :data:`JOINED_RUN_LISTS` over all of ``docs``' plans, in order, each item once
    (the pieces of one run have the same lists, so for them it is the first's)."""
    joined: dict[str, list[Any]] = {}
    for key in JOINED_RUN_LISTS:
        items = [v for d in docs for v in (d.environment.get("run") or {}).get(key) or ()]
        if items:
            joined[key] = list(dict.fromkeys(items))
    return joined


def merge_documents(docs: Sequence[Document], allow_mixed: bool = False) -> Document:
    """One document of the pieces of one run (shards, or runs over different problems).

    Refused (:class:`MergeError`): anything but bench documents; a unit in two pieces; unless
    ``allow_mixed``, pieces of different plans, git SHAs or GPU models. The result lists its
    pieces (``merged_from``) and every GPU they ran on; it is ``finished`` when the pieces hold
    every unit of the plan (a piece cut short gives the units it finished). Pieces of
    different plans (``allow_mixed``) make one plan of all of theirs
    (:data:`JOINED_RUN_LISTS`): its suites, units, kernels.
    """
    if not docs:
        raise MergeError("nothing to merge")
    for d in docs:
        if d.kind != "bench":
            raise MergeError(f"{d.source}: a {d.kind} document; only bench runs merge")
    first = docs[0]
    owner: dict[str, str] = {}
    for d in docs:
        for key in sorted(finished_units(d)):
            if key in owner:
                raise MergeError(f"{key} is in both {owner[key]} and {d.source}")
            owner[key] = d.source or "?"
    if not allow_mixed:
        for d in docs[1:]:
            diffs = plan_differences(first.environment, d.environment)
            if diffs:
                raise MergeError(
                    f"{d.source} and {first.source} differ in {', '.join(diffs)} "
                    "(--allow-mixed merges them anyway)"
                )
        shas = {d.environment.get("git_sha") for d in docs}
        if len(shas) > 1:
            raise MergeError(
                f"the pieces were measured with different code (git {', '.join(map(str, shas))}); "
                "--allow-mixed merges them anyway"
            )
        models = set().union(*(_gpu_models(d) for d in docs))
        if len(models) > 1:
            raise MergeError(
                f"the pieces ran on different GPU models ({', '.join(sorted(models))}); "
                "--allow-mixed merges them anyway"
            )
    run = {k: v for k, v in (first.environment.get("run") or {}).items() if k != "shard"}
    run.update(_joined_plans(docs))
    plan = list(run.get("units") or [])
    order = {key: i for i, key in enumerate(plan)}
    records = sorted(
        (r for d in docs for r in d.bench),
        key=lambda r: order.get(r.problem_key, len(order)),
    )
    missing = [key for key in plan if key not in owner]
    env = dict(first.environment)
    env["run"] = run
    env["gpus"] = _gpus(docs)
    env["quarantined"] = [q for d in docs for q in d.environment.get("quarantined") or []]
    env["merged_from"] = [
        {
            "source": d.source,
            "created": d.created,
            "finished": d.finished,
            "host": d.environment.get("host"),
            "git_sha": d.environment.get("git_sha"),
            "shard": (d.environment.get("run") or {}).get("shard"),
            "units": len(finished_units(d)),
        }
        for d in docs
    ]
    env["missing_units"] = missing
    # A piece cut short counts for the units it holds (a unit's records are written together):
    # an interrupted run and its rest (``bench --rest-of``) make one finished run.
    done = not missing
    return Document(
        kind="bench",
        environment=env,
        records=tuple(records),
        created=min((d.created for d in docs if d.created), default=None),
        finished=_dt.datetime.now(_dt.UTC).isoformat(timespec="seconds") if done else None,
    )
