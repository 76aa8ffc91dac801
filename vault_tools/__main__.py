"""`vt` and `python -m vault_tools`: the entry point."""


def main() -> None:
    from vault_tools.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
