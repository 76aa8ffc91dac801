"""`vt` and `python -m vault_tools`: the entry point.

The pre-commit hook runs `vt hook run` on every commit, so that one command skips
Typer's import (about 150 ms) and goes straight to its lean core.
"""

import sys


def main() -> None:
    if sys.argv[1:3] == ["hook", "run"]:
        from vault_tools.integrations.hook import main as hook_main

        try:
            code = hook_main(sys.argv[3:])
        except Exception as exc:  # noqa: BLE001 - never a traceback, as run_app
            from vault_tools.cli.crash import unhandled

            code = unhandled(exc, ["vt", *sys.argv[1:]])
        sys.exit(code)
    from vault_tools.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
