"""Who counts as a bot: prefilter drops bots' PRs, enrich ignores bots' comments."""

from __future__ import annotations


def is_bot(login: str, bots: frozenset[str] = frozenset()) -> bool:
    """GitHub Apps log in as ``name[bot]``; older bots are plain accounts, listed in ``bots``."""
    lowered = login.lower()
    return lowered.endswith("[bot]") or lowered in bots
