import sys

# the hook runs on every commit; skip Typer's import
if sys.argv[1:3] == ["hook", "run"]:
    from vault_tools.hook import main as _hook_main

    sys.exit(_hook_main(sys.argv[3:]))

from vault_tools.cli import main  # noqa: E402

main()
