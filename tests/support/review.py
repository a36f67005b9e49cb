"""Review signals: findings a reviewer should see that do not fail the run."""

from __future__ import annotations


class ModuleSizeReview(UserWarning):
    """A module past the review size: a prompt to split it by concept, never to squeeze it."""
