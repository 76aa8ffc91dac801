"""Tests of `vault_tools/review/`."""
