"""Where a conversation keeps its pruned results for ``omitted`` (SPEC §10).

A :class:`~toolprune.Conversation` asks its store for the next id number
(the guest writes ``P{number}`` into the markers), the record of an id,
and — for the repeat gate (SPEC §2) — the call keys of the records it
holds (``StoredResult.call``: digests the guest made, never arguments). The default, :class:`MemoryStore`, is the in-process store every
host has: bounded by the guest's limits (count and characters), oldest
evicted first. Another store (:class:`toolprune.redis_store.RedisStore`:
shared by the instances of an MCP gateway) plugs in through
``Pruner.conversation(backend=…)``:

    from toolprune.redis_store import RedisStore
    conversation = pruner.conversation(enabled=True, backend=RedisStore(client, scope="team-a"))

A store holds :class:`~toolprune.StoredResult` values as the guest made
them (``data`` is the guest's encoding: kept as it is, never read by a
host) and never logs them.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import List, Optional

try:  # Python >= 3.8
    from typing import Protocol, runtime_checkable
except ImportError:  # pragma: no cover
    from typing_extensions import Protocol, runtime_checkable  # type: ignore[assignment]

from .types import StoredResult, StoreLimits


@runtime_checkable
class Store(Protocol):
    """What a conversation needs of its store (SPEC §10). Implementations
    must be thread-safe. A method that raises makes the conversation fail
    open: a result whose number or record cannot be had is returned raw
    (outcome ``failed``), an ``omitted`` whose record cannot be read answers
    the guest's "try again" text."""

    def next_number(self) -> int:
        """The next id number, ≥ 1, never given before in this store's
        scope (the conversation, or every gateway instance sharing it).
        Gaps are allowed."""
        ...

    def put(self, record: StoredResult) -> None:
        """Keeps ``record`` (its ``id`` is ``P{number}`` of a
        :meth:`next_number`), evicting others past the store's bounds."""
        ...

    def get(self, id: str) -> Optional[StoredResult]:
        """The record of ``id`` (``P3``), or None if this store does not
        hold it (never held, evicted, expired, or another scope's)."""
        ...

    # Optional (looked up with getattr, so stores written for contract 0.2 still work):
    #
    # def calls(self) -> List[str]:
    #     """The ``call`` keys of the records held (those that have one), for
    #     the repeat gate: passed to the guest as ``prune-input.pruned-calls``.
    #     Without it no repeat is ever detected."""
    #
    # def peek_number(self) -> int:
    #     """What :meth:`next_number` would answer now, without taking it (the
    #     import form's first guess of a result's id; a wrong guess only costs
    #     one more guest call). Without it the conversation guesses."""


class MemoryStore:
    """The in-process store: bounded by ``limits`` (``max_records`` and
    ``max_chars``, the records' ``chars``), oldest evicted first; numbers
    count from 1. Thread-safe."""

    def __init__(self, limits: StoreLimits) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._count = 0
        self._records: "OrderedDict[str, StoredResult]" = OrderedDict()
        self._chars = 0

    def next_number(self) -> int:
        """The last number stored + 1 (a number is taken by :meth:`put`)."""
        with self._lock:
            return self._count + 1

    def peek_number(self) -> int:
        """What :meth:`next_number` answers (it takes nothing here)."""
        with self._lock:
            return self._count + 1

    def calls(self) -> List[str]:
        """The call keys of the records held, oldest first (SPEC §2: the repeat gate)."""
        with self._lock:
            return [r.call for r in self._records.values() if r.call is not None]

    def put(self, record: StoredResult) -> None:
        with self._lock:
            number = _number(record.id)
            if number is not None and number > self._count:
                self._count = number
            old = self._records.pop(record.id, None)
            if old is not None:  # pragma: no cover - ids are never reused
                self._chars -= old.chars
            self._records[record.id] = record
            self._chars += record.chars
            while self._records and (len(self._records) > self.limits.max_records or self._chars > self.limits.max_chars):
                _, oldest = self._records.popitem(last=False)
                self._chars -= oldest.chars

    def get(self, id: str) -> Optional[StoredResult]:
        with self._lock:
            return self._records.get(id)

    def records(self) -> List[StoredResult]:
        """The records held now, oldest first."""
        with self._lock:
            return list(self._records.values())


def _number(id: str) -> Optional[int]:
    if id.startswith("P") and id[1:].isdigit():
        return int(id[1:])
    return None


__all__ = ["MemoryStore", "Store"]
