"""``python -m reports``: see :mod:`reports.cli`."""

from __future__ import annotations

if __name__ == "__main__":
    from reports.cli import main

    raise SystemExit(main())
