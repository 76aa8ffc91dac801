"""vault_tools: the `vt` command beside an Obsidian vault of claim review notes."""

__version__ = "0.1.0"
