"""The review use cases (draft, preview, apply, revert, status, history), which never
import one another, and what they share: claims, fingerprint, verdict, actor, marking,
diff."""
