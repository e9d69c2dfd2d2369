"""Reports rendered from result files alone (no GPU, no DSL): figures, report.md, CSVs.

An entry point of its own (``python -m reports``, see :mod:`reports.cli`) so the harness, which
measures, never imports the code that presents: ``reports`` reads the harness's typed records
(:mod:`harness.results`), never the other way round. ``python -m reports promote`` is the one
way a run enters the committed ``reports/results``.
"""
