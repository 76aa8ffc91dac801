"""Tests of `vault_tools/store/`."""
