"""The review use cases: diff, draft, preview, apply, revert, status, history."""
