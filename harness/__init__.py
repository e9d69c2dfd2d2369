"""The benchmark harness: protocol, discovery, checks, timing, isolation, results, CLI.

The harness knows no DSL: backends plug in through :mod:`harness.protocol`.
"""
