"""vt's tests, one folder per subpackage of `vault_tools` (tests/ledger/ for
`vault_tools/ledger/`), the top-level modules' tests beside this file."""
