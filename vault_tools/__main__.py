"""`vt` and `python -m vault_tools`: the entry point.

git runs `vt hook run` on every commit: cli/hook_run.py runs it without importing
Typer, and hands back only what it leaves to the Typer command (`--help`, mistakes).
"""

import sys


def main() -> None:
    if sys.argv[1:3] == ["hook", "run"]:
        from vault_tools.cli.hook_run import main as hook_run

        hook_run(sys.argv[3:])
    from vault_tools.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
