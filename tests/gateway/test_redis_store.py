"""toolprune.redis_store against a real redis-server (Debian's): scopes never see
each other's records, ids are unique across clients (INCR), records have a TTL and
the scope's bound evicts the oldest first, atomically across clients."""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path
from typing import Iterator

import pytest
import redis

from conftest import REDIS_SERVER, free_port, stop, wait_port
from toolprune import StoredResult
from toolprune.redis_store import RedisStore


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[redis.Redis]:
    port = free_port()
    log = tmp_path_factory.mktemp("redis") / "redis.log"
    proc = subprocess.Popen([REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=open(log, "wb"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_port(port, proc, "redis-server", 30, log)
        yield redis.Redis(port=port)
    finally:
        stop(proc)


def record(n: int, chars: int = 10) -> StoredResult:
    return StoredResult(id=f"P{n}", chars=chars, data=f"data {n}")


def test_another_scope_never_reads_a_record(client: redis.Redis) -> None:
    a, b = RedisStore(client, "scope-a"), RedisStore(client, "scope-b")
    n = a.next_number()
    a.put(record(n))
    assert a.get(f"P{n}") == record(n)
    assert b.get(f"P{n}") is None
    assert RedisStore(client, "scope-a").get(f"P{n}") == record(n), "another instance, the same scope"


def test_numbers_are_unique_across_clients_of_a_scope(client: redis.Redis) -> None:
    got: list = []
    lock = threading.Lock()

    def take() -> None:
        store = RedisStore(redis.Redis(connection_pool=client.connection_pool), "shared")
        for _ in range(50):
            n = store.next_number()
            with lock:
                got.append(n)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 400 and len(set(got)) == 400


def test_records_expire_and_the_bound_evicts_the_oldest(client: redis.Redis) -> None:
    store = RedisStore(client, "bounded", ttl_s=120, max_records=3, max_chars=100)
    for n in range(1, 6):
        store.put(record(n))
    assert [store.get(f"P{n}") is not None for n in range(1, 6)] == [False, False, True, True, True]
    assert 0 < client.ttl("toolprune:bounded:r:P5") <= 120
    store.put(record(6, chars=95))
    assert [store.get(f"P{n}") is not None for n in range(3, 7)] == [False, False, False, True], "over max_chars"
    with pytest.raises(ValueError, match="max_chars"):
        store.put(record(7, chars=101))
    assert store.get("P7") is None


def test_a_bad_scope_is_refused(client: redis.Redis) -> None:
    for scope in ("", "a:b", "x" * 201, "é"):
        with pytest.raises(ValueError):
            RedisStore(client, scope)


def test_call_keys_are_kept_with_their_records_and_go_with_them(client: redis.Redis) -> None:
    """The repeat gate's keys (SPEC §2): stored with each record, listed per
    scope, evicted with their record, never another scope's."""
    store = RedisStore(client, "calls", ttl_s=120, max_records=2, max_chars=100)
    keyed = lambda n: StoredResult(id=f"P{n}", chars=10, data=f"data {n}", call=f"{n:032x}")  # noqa: E731
    store.put(keyed(1))
    store.put(record(2))  # a record without arguments has no key
    assert store.get("P1") == keyed(1) and store.calls() == [f"{1:032x}"]
    assert RedisStore(client, "calls-other").calls() == []
    store.put(keyed(3))
    store.put(keyed(4))  # max_records 2: P1 and P2 go
    assert sorted(store.calls()) == [f"{3:032x}", f"{4:032x}"]
    assert 0 < client.ttl("toolprune:calls:k") <= 120
