"""Who decided: the actor an event names when its note names no reviewer."""

from __future__ import annotations

import getpass
import os
import subprocess
from functools import lru_cache

from vault_tools.config import Settings


def default_actor(settings: Settings) -> str:
    """The actor when a note names no reviewer: vt.toml, else git user.name, else the OS user."""
    if settings.actor:
        return settings.actor
    return _git_user(str(settings.vault)) or _os_user()


@lru_cache(maxsize=8)
def _git_user(folder: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "config", "user.name"],
            cwd=folder,
            capture_output=True,
            encoding="utf-8",  # git's bytes, not the locale's code page (Windows)
            errors="replace",
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    name = done.stdout.strip()
    return name if done.returncode == 0 and name else None


def _os_user() -> str:
    try:
        return getpass.getuser() or "unknown"
    # no passwd entry (containers); no pwd module and no USERNAME (Windows)
    except (KeyError, OSError, ImportError):
        return str(os.getuid()) if hasattr(os, "getuid") else "unknown"
