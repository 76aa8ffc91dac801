"""vt beside other tools: watch, git hooks, init, dashboard, entities, import, demo."""
