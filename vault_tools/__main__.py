from vault_tools.cli import main

main()
