"""Tests of `vault_tools/checks/`."""
