"""Tests of `vault_tools/integrations/`."""
