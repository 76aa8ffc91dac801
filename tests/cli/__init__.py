"""Tests of `vault_tools/cli/`."""
