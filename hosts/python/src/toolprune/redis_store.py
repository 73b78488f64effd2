"""A :class:`toolprune.store.Store` in Redis, shared by every process that
uses the same Redis and scope: the instances of an MCP gateway (SPEC §10,
§15; ``docs/gateway.md``).

Keys, under ``{prefix}:{scope}:`` (``scope`` is an opaque label chosen by
the caller: the gateway plugin uses a keyed hash of the user's identity, so
no name or address is written to Redis):

- ``n`` — the id counter (``INCR``): numbers are unique across instances
  within the scope;
- ``r:P3`` — one record (a JSON object ``{"id", "chars", "data"}``), with a
  TTL (``ttl_s``);
- ``i`` / ``c`` — the scope's records oldest first and their characters,
  for the size bound: past ``max_records`` or ``max_chars`` the oldest are
  deleted, in one Lua script (atomic across instances);
- ``k`` — the records' call keys (``StoredResult.call``, digests the guest
  made, never arguments) by id, for the repeat gate (:meth:`RedisStore.calls`);
  an evicted record's key goes with it.

A record of another scope is never read: ``get`` only looks under its own
prefix, so another user's or team's ``P3`` answers ``not_found``. Needs the
``redis`` package (``pip install 'toolprune[redis]'``).
"""

from __future__ import annotations

import json
from typing import Any, List, Optional

from .types import StoredResult

# KEYS: record, index list, chars hash, total, calls hash.  ARGV: id, value, chars, ttl, max_records, max_chars, prefix, call ('' = none)
_PUT = """
local ttl = tonumber(ARGV[4])
redis.call('SET', KEYS[1], ARGV[2], 'EX', ttl)
redis.call('RPUSH', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
if ARGV[8] ~= '' then redis.call('HSET', KEYS[5], ARGV[1], ARGV[8]) end
redis.call('INCRBY', KEYS[4], ARGV[3])
local max_records = tonumber(ARGV[5])
local max_chars = tonumber(ARGV[6])
local evicted = 0
while true do
    local n = redis.call('LLEN', KEYS[2])
    local total = tonumber(redis.call('GET', KEYS[4]) or '0')
    local oldest = redis.call('LINDEX', KEYS[2], 0)
    if not oldest then break end
    local gone = redis.call('EXISTS', ARGV[7] .. oldest) == 0
    if not (gone or n > max_records or total > max_chars) then break end
    redis.call('LPOP', KEYS[2])
    local c = tonumber(redis.call('HGET', KEYS[3], oldest) or '0')
    redis.call('HDEL', KEYS[3], oldest)
    redis.call('HDEL', KEYS[5], oldest)
    redis.call('DECRBY', KEYS[4], c)
    redis.call('DEL', ARGV[7] .. oldest)
    if oldest == ARGV[1] then evicted = 1 end
end
redis.call('EXPIRE', KEYS[2], ttl)
redis.call('EXPIRE', KEYS[3], ttl)
redis.call('EXPIRE', KEYS[4], ttl)
redis.call('EXPIRE', KEYS[5], ttl)
return evicted
"""


class RedisStore:
    """The records of one scope in Redis.

    ``client``: a ``redis.Redis`` (sync; give it short ``socket_timeout``
    and ``socket_connect_timeout``: a call that fails makes the result pass
    raw). ``scope``: the label records are kept under (≤ 200 characters of
    ``[A-Za-z0-9_.-]``). ``ttl_s``: seconds a record lives (SPEC §10: at
    least the turn). ``max_records``, ``max_chars``: the scope's bounds,
    oldest evicted first. Raises :class:`ValueError` on a bad scope or
    bound; its methods raise the client's errors (``redis.RedisError``).
    """

    def __init__(
        self,
        client: Any,
        scope: str,
        *,
        ttl_s: int = 3600,
        max_records: int = 200,
        max_chars: int = 8_000_000,
        prefix: str = "toolprune",
    ) -> None:
        if not scope or len(scope) > 200 or not all(ch.isascii() and (ch.isalnum() or ch in "_.-") for ch in scope):
            raise ValueError("scope must be 1-200 characters of [A-Za-z0-9_.-]")
        for name, value in (("ttl_s", ttl_s), ("max_records", max_records), ("max_chars", max_chars)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int")
        self.client = client
        self.scope = scope
        self.ttl_s = ttl_s
        self.max_records = max_records
        self.max_chars = max_chars
        self._base = f"{prefix}:{scope}:"
        self._put = client.register_script(_PUT)

    def next_number(self) -> int:
        """``INCR`` of the scope's counter (its TTL outlives every record)."""
        key = self._base + "n"
        pipe = self.client.pipeline(transaction=True)
        pipe.incr(key)
        pipe.expire(key, self.ttl_s + 3600)
        number, _ = pipe.execute()
        return int(number)

    def put(self, record: StoredResult) -> None:
        """Keeps ``record`` for ``ttl_s`` and evicts past the bounds. A
        record over ``max_chars`` on its own is evicted at once: raises
        :class:`ValueError` (the result then passes raw: nothing would
        answer its id)."""
        value = json.dumps({"id": record.id, "chars": record.chars, "call": record.call, "data": record.data}, ensure_ascii=False)
        b = self._base
        evicted = self._put(
            keys=[b + "r:" + record.id, b + "i", b + "c", b + "t", b + "k"],
            args=[record.id, value, record.chars, self.ttl_s, self.max_records, self.max_chars, b + "r:", record.call or ""],
        )
        if int(evicted):
            raise ValueError("the record is over the store's max_chars")

    def get(self, id: str) -> Optional[StoredResult]:
        """The record of ``id`` in this scope, or None."""
        if not id or len(id) > 32:
            return None
        raw = self.client.get(self._base + "r:" + id)
        if raw is None:
            return None
        rec = json.loads(raw)
        call = rec.get("call")
        return StoredResult(id=str(rec["id"]), chars=int(rec["chars"]), data=str(rec["data"]), call=None if call is None else str(call))

    def calls(self) -> List[str]:
        """The call keys of the scope's records (those that have one), for the
        repeat gate (SPEC §2). Raises the client's errors."""
        return [v.decode() if isinstance(v, bytes) else str(v) for v in self.client.hvals(self._base + "k")]


__all__ = ["RedisStore"]
