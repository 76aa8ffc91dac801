"""The `vt` command line: thin Typer commands over the core modules.

One module per command (or command group), named after it: `vt status` is in
`cli/status.py`, `vt import` in `cli/import_.py`, `vt ledger verify` in `cli/ledger.py`.
Each command turns its options into `Settings`, calls one core function and hands the
result to the `Reporter` (`cli/output.py`).

This package's own module imports nothing, not even Typer: `vt hook run`, which git runs
on every commit, goes through cli/hook_run.py without it. The app is assembled in
cli/dispatch.py, whose names (`main`, `app`, `app_for`, `load_all`, `COMMANDS`) are
forwarded from here.
"""

from __future__ import annotations

from typing import Any

_FORWARDED = {"app_for", "load", "load_all", "COMMANDS"}


def main() -> None:
    from vault_tools.cli.dispatch import main as run

    run()


def __getattr__(name: str) -> Any:
    # any other name (a submodule not imported yet: `from vault_tools.cli import root`)
    # is not this function's, so that Python imports the submodule
    if name != "app" and name not in _FORWARDED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from vault_tools.cli import dispatch

    if name == "app":  # `from vault_tools.cli import app`: the whole command line
        return dispatch.load_all()
    return getattr(dispatch, name)
