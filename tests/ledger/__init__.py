"""Tests of `vault_tools/ledger/`."""
