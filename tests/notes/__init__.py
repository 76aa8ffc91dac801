"""Tests of `vault_tools/notes/`."""
