"""Tests of `vault_tools/infra/`."""
