"""vt inside git: the hooks, the merge drivers, the refresh after a pull, the audit."""
