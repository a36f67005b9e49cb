"""Keyed hashes of what must never leave the process as it is (private).

Each :class:`KeyedHash` holds its own random per-process key: equal material hashes equal inside
one process, and a hash can be neither reversed nor compared across processes (a separate key per
purpose, so a hash of one kind never matches a hash of another). HMAC-SHA256, hex digits.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets


class KeyedHash:
    """HMAC-SHA256 under a random key made when the instance is."""

    __slots__ = ("_key",)

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def hexdigest(self, material: str) -> str:
        """The hash of ``material`` (UTF-8, lone surrogates kept), all 64 hex digits."""
        data = material.encode("utf-8", "surrogatepass")
        return hmac.new(self._key, data, hashlib.sha256).hexdigest()
