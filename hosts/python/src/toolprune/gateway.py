"""toolprune for an MCP gateway, on plain types (SPEC §15 "A gateway";
``docs/gateway.md``). :mod:`toolprune.contextforge` adapts it to
ContextForge's plugin hooks; nothing here imports a gateway.

A gateway never sees the user's message, so the basis is the **argument
basis**: each prunable tool's schema in the gateway's registry carries the
optional argument :meth:`Pruner.request_argument` names (``user_request``);
the model restates the request there, :meth:`GatewayPruner.strip` removes
it before the call goes upstream, and :meth:`GatewayPruner.prune` prunes
the call's text result on it (none: ``no_basis``, unchanged). The call's
arguments (as sent upstream, without the basis argument) go with the result
for the repeat gate (SPEC §2): the same tool called again with the same
arguments in the same scope, after its result was pruned, passes unpruned
(``skipped``, gate ``repeated``, a log line) — the model asked again.

Pruned results go to a :class:`toolprune.store.Store` per **scope**: a keyed
hash (HMAC-SHA256 with the gateway's secret) of the identity the gateway
gives plugins — the user and, for a team-scoped token, the team — so one
user's records are never read under another's scope, and Redis holds no
name. The ``omitted`` tool (:mod:`toolprune.omitted_server`, registered in
the gateway like any server) is handed that scope by :meth:`GatewayPruner.strip`
as the argument ``toolprune_scope`` (overwriting any the client sent).

Fail-open: :meth:`prune` returns None (the result exactly as the server
returned it) on any error, with a counts-only log line.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .pruner import Conversation, Pruner
from .store import MemoryStore, Store

SCOPE_ARGUMENT = "toolprune_scope"
"""The argument that carries the caller's scope to the ``omitted`` server."""

AGENT = "contextforge"
log = logging.getLogger("toolprune")


@dataclass(frozen=True)
class Identity:
    """Who called, as far as the gateway says: ``user`` (an id or email),
    ``team`` (the token's team, if it is team-scoped). Either may be None."""

    user: Optional[str]
    team: Optional[str] = None


@dataclass
class GatewaySettings:
    """The plugin's configuration (ContextForge: the plugin's ``config:``
    mapping; unknown keys raise :class:`ValueError`). Unset values come from
    the toolprune configuration every door reads (``TOOLPRUNE_*``
    variables and the config file, resolved by the guest).

    - ``enabled``: prune (default True: enabling the plugin opts in);
    - ``prunable``: tool-name globs (default the configuration's);
    - ``threshold``: 0.1 / 0.2 / 0.3 / 0.5 (default the configuration's);
    - ``lang``: ``en`` / ``ja``;
    - ``scorer``: ``jev`` / ``offline`` / ``stub`` (default Jev when an
      endpoint and its token are configured on the gateway, else offline);
    - ``omitted_tools``: the gateway names of the ``omitted`` tool
      (default ``["toolprune-omitted"]``: a server registered as
      ``toolprune`` with the default separator);
    - ``redis_url``: the store (default ``$REDIS_URL``, the gateway's own);
      ``memory`` keeps it in the process (one instance only);
    - ``scope_secret``: the HMAC key of scopes (default
      ``$TOOLPRUNE_SCOPE_SECRET``, else the gateway's
      ``AUTH_ENCRYPTION_SECRET``; the same on every instance);
    - ``ttl_s``, ``max_records``, ``max_chars``: each scope's store bounds
      (default 3600 s and the guest's store limits).
    """

    enabled: bool = True
    prunable: Optional[List[str]] = None
    threshold: Optional[float] = None
    lang: Optional[str] = None
    scorer: Optional[str] = None
    omitted_tools: List[str] = field(default_factory=lambda: ["toolprune-omitted"])
    redis_url: Optional[str] = None
    scope_secret: Optional[str] = None
    ttl_s: int = 3600
    max_records: Optional[int] = None
    max_chars: Optional[int] = None

    @classmethod
    def from_mapping(cls, values: Optional[Mapping[str, Any]]) -> "GatewaySettings":
        values = dict(values or {})
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"toolprune: unknown plugin config key(s): {', '.join(unknown)}")
        return cls(**values)


def scope_of(identity: Identity, secret: bytes) -> Optional[str]:
    """The store scope of ``identity``: 32 hex digits of
    HMAC-SHA256(secret, user, team), or None without a user (then nothing
    is pruned: no record could be given back to its owner alone)."""
    if not identity.user:
        return None
    message = f"user={identity.user}\nteam={identity.team or ''}".encode("utf-8", "surrogatepass")
    return hmac.new(secret, message, hashlib.sha256).hexdigest()[:32]


class GatewayPruner:
    """The gateway's side of toolprune: one per gateway process.

    ``pruner``: a loaded :class:`Pruner`. ``settings``: a
    :class:`GatewaySettings`. ``store_for``: ``scope → Store`` (default a
    :class:`toolprune.redis_store.RedisStore` on ``settings.redis_url``).
    ``environ``: the variables the configuration is read from (default
    ``os.environ``). Raises :class:`ValueError` on a bad configuration.
    """

    def __init__(
        self,
        pruner: Pruner,
        settings: GatewaySettings,
        *,
        store_for: Optional[Callable[[str], Store]] = None,
        environ: Optional[Mapping[str, str]] = None,
        secret: Optional[bytes] = None,
    ) -> None:
        env = dict(os.environ if environ is None else environ)
        self.pruner = pruner
        self.settings = settings
        config = pruner.config(env)
        self.enabled = bool(settings.enabled)
        self.globs: List[str] = list(settings.prunable) if settings.prunable is not None else list(config.prunable)
        self.threshold = settings.threshold if settings.threshold is not None else config.threshold
        self.lang = settings.lang or config.lang
        self.scorer = self._scorer(settings.scorer, config, env)
        self.limits = config.store
        self.request_argument = pruner.request_argument(self.lang)
        self.basis_name: str = self.request_argument["name"]
        self.omitted_names = set(settings.omitted_tools)
        if secret is None:
            raw = settings.scope_secret or env.get("TOOLPRUNE_SCOPE_SECRET") or env.get("AUTH_ENCRYPTION_SECRET")
            if not raw:
                raise ValueError("toolprune: no scope secret (scope_secret, $TOOLPRUNE_SCOPE_SECRET or $AUTH_ENCRYPTION_SECRET)")
            secret = raw.encode("utf-8")
        self._secret = secret
        self._store_for = store_for or self._redis_stores(settings.redis_url or env.get("REDIS_URL"))
        self._lock = threading.Lock()
        self._conversations: "OrderedDict[str, Conversation]" = OrderedDict()
        self._prunable: Dict[str, bool] = {}

    # --- configuration -----------------------------------------------------------------

    def _scorer(self, chosen: Optional[str], config: Any, env: Mapping[str, str]) -> Any:
        if chosen in ("offline", "stub"):
            return chosen
        if chosen not in (None, "jev"):
            raise ValueError(f"toolprune: scorer must be jev, offline or stub, not {chosen!r}")
        configured = not isinstance(config.jev, str) and bool((env.get(config.token_variable) or "").strip())
        if chosen == "jev" or configured:
            from .jev import JevScorer

            return JevScorer.from_env(env, pruner=self.pruner)
        return "offline"

    def _redis_stores(self, url: Optional[str]) -> Callable[[str], Store]:
        limits = self.limits
        max_records = self.settings.max_records or limits.max_records
        max_chars = self.settings.max_chars or limits.max_chars
        if url == "memory":
            stores: Dict[str, MemoryStore] = {}
            bounds = type(limits)(max_records=max_records, max_chars=max_chars, max_age_s=self.settings.ttl_s)

            def memory(scope: str) -> Store:
                with self._lock:
                    return stores.setdefault(scope, MemoryStore(bounds))

            return memory
        if not url:
            raise ValueError("toolprune: no store (redis_url, or $REDIS_URL)")
        import redis

        client = redis.Redis.from_url(url, socket_timeout=1.0, socket_connect_timeout=1.0, retry_on_timeout=False)
        from .redis_store import RedisStore

        ttl = self.settings.ttl_s
        return lambda scope: RedisStore(client, scope, ttl_s=ttl, max_records=max_records, max_chars=max_chars)

    # --- the two hooks --------------------------------------------------------------------

    def scope(self, identity: Identity) -> Optional[str]:
        """:func:`scope_of` with the gateway's secret."""
        return scope_of(identity, self._secret)

    def is_prunable(self, names: Sequence[str]) -> bool:
        """Whether a tool known by ``names`` (the gateway's name, its
        original name) is prunable: one of them matches the globs and is
        not a reader, shell, editor or ``omitted`` (the guest decides)."""
        if not self.enabled or any(n in self.omitted_names for n in names):
            return False
        answers = []
        for name in names:
            known = self._prunable.get(name)
            if known is None:
                known = self.pruner.is_prunable(name, self.globs)
                self._prunable[name] = known
            answers.append(known)
        return any(answers)

    def strip(self, names: Sequence[str], args: Optional[Mapping[str, Any]], identity: Identity) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
        """Before the call: ``(new_args, basis)``. For a prunable tool the
        basis argument is removed (``basis`` its text, or None); for the
        ``omitted`` tool ``toolprune_scope`` is set to the caller's scope (or
        removed when there is none). ``new_args`` None: leave the call as it is."""
        if args is None:
            args = {}
        if any(n in self.omitted_names for n in names):
            new = {k: v for k, v in args.items() if k != SCOPE_ARGUMENT}
            scope = self.scope(identity)
            if scope is not None:
                new[SCOPE_ARGUMENT] = scope
            return new, None
        if not self.is_prunable(names) or self.basis_name not in args:
            return None, None
        new = {k: v for k, v in args.items() if k != self.basis_name}
        basis = args[self.basis_name]
        return new, basis if isinstance(basis, str) else None

    def conversation(self, scope: str) -> Conversation:
        """The scope's conversation (the store, a guest instance), kept for
        the 256 most recent scopes."""
        with self._lock:
            found = self._conversations.get(scope)
            if found is not None:
                self._conversations.move_to_end(scope)
                return found
        made = self.pruner.conversation(
            enabled=self.enabled,
            threshold=self.threshold,
            lang=self.lang,
            agent=AGENT,
            scorer=self.scorer,
            log=log.info,
            backend=self._store_for(scope),
        )
        with self._lock:
            found = self._conversations.setdefault(scope, made)
            while len(self._conversations) > 256:
                self._conversations.popitem(last=False)
        return found

    async def prune(
        self,
        names: Sequence[str],
        result: Any,
        basis: Optional[str],
        identity: Identity,
        arguments: Optional[Mapping[str, Any]] = None,
    ) -> Optional[Dict[str, Any]]:
        """After the call: the result (an MCP ``CallToolResult`` as a dict,
        ``content`` / ``isError`` / ``structuredContent``) with its text
        items pruned, or None to leave it exactly as the server returned it:
        not prunable, a failed call, structured content, no text, nothing
        changed, a repeated call, no identity, or any error (then a
        counts-only log line). ``arguments``: the call's arguments as they
        went upstream (:meth:`strip`'s, without the basis argument), for the
        repeat gate; None: no repeat is detected."""
        try:
            return await self._prune(names, result, basis, identity, arguments)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # fail open: the server's result, unchanged
            log.warning("tool prune: agent=%s outcome=failed reason=plugin error=%s", AGENT, type(err).__name__)
            return None

    async def _prune(
        self, names: Sequence[str], result: Any, basis: Optional[str], identity: Identity, arguments: Optional[Mapping[str, Any]]
    ) -> Optional[Dict[str, Any]]:
        if not names or not self.is_prunable(names) or not isinstance(result, Mapping):
            return None
        if result.get("isError", result.get("is_error")) or result.get("structuredContent", result.get("structured_content")) is not None:
            return None
        content = result.get("content")
        if not isinstance(content, list) or not any(_is_text(item) for item in content):
            return None
        scope = self.scope(identity)
        if scope is None:
            log.info("tool prune: agent=%s outcome=skipped gate=no_identity", AGENT)
            return None
        turn = self.conversation(scope).turn(basis or "")
        # The mapping itself: the library encodes it by the one rule of every host (no arguments if not JSON).
        args = None if arguments is None else dict(arguments)
        changed = False
        items: List[Any] = []
        for item in content:
            if _is_text(item):
                pruned = await turn.on_tool_result_async(tool=names[0], text=item["text"], ok=True, prunable=True, arguments=args)
                if pruned.body is not item["text"] and pruned.body != item["text"]:
                    item = {**item, "text": pruned.body}
                    changed = True
            items.append(item)
        if not changed:
            return None
        return {**dict(result), "content": items}



def with_basis(schema: Mapping[str, Any], argument: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """``schema`` (a tool's ``inputSchema``) with the optional basis
    ``argument`` (:meth:`Pruner.request_argument`) among its properties, or
    None when it already has a property of that name (the tool's own: left
    alone, and no argument basis for it). Never added to ``required``."""
    props = dict(schema.get("properties") or {})
    if argument["name"] in props:
        return None
    props[argument["name"]] = dict(argument["schema"])
    return {**dict(schema), "type": schema.get("type", "object"), "properties": props}


def add_basis(gateway_url: str, token: str, pruner: Pruner, globs: Sequence[str], lang: Optional[str] = None) -> List[str]:
    """Adds the basis argument to the schema of every prunable tool in a
    ContextForge gateway's registry (``GET /tools``, ``PUT /tools/{id}``
    with ``input_schema``), as the admin whose ``token`` is given. Returns
    the names of the tools changed. Raises ``urllib.error.URLError``. Run it
    again after the gateway re-reads a server's tools (a refresh replaces
    the schemas)."""
    import urllib.request

    argument = pruner.request_argument(lang)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}

    def call(method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(gateway_url.rstrip("/") + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read() or b"null")

    changed = []
    for tool in call("GET", "/tools?include_inactive=false&limit=0"):
        names = [n for n in (tool.get("name"), tool.get("originalName")) if isinstance(n, str)]
        if not any(pruner.is_prunable(n, list(globs)) for n in names):
            continue
        schema = with_basis(tool.get("inputSchema") or {}, argument)
        if schema is None:
            continue
        call("PUT", f"/tools/{tool['id']}", {"input_schema": schema})
        changed.append(tool["name"])
    return changed


def main(argv: Optional[Sequence[str]] = None) -> int:
    """``python -m toolprune.gateway add-basis --gateway URL [--prunable GLOB…]``
    (the admin token in ``$TOOLPRUNE_GATEWAY_TOKEN``): :func:`add_basis`."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog="python -m toolprune.gateway")
    sub = parser.add_subparsers(dest="command", required=True)
    add = sub.add_parser("add-basis", help="add the basis argument to the prunable tools' schemas in a ContextForge registry")
    add.add_argument("--gateway", required=True, help="the gateway's URL (http://host:4444)")
    add.add_argument("--prunable", nargs="*", default=None, help="tool-name globs (default: the toolprune configuration's)")
    add.add_argument("--lang", choices=["en", "ja"], default=None)
    ns = parser.parse_args(argv)
    token = os.environ.get("TOOLPRUNE_GATEWAY_TOKEN", "")
    if not token:
        print("toolprune: set TOOLPRUNE_GATEWAY_TOKEN to an admin token of the gateway", file=sys.stderr)
        return 2
    pruner = Pruner.load()
    globs = ns.prunable if ns.prunable is not None else pruner.config().prunable
    for name in add_basis(ns.gateway, token, pruner, globs, ns.lang):
        print(name)
    return 0


def _is_text(item: Any) -> bool:
    return isinstance(item, Mapping) and item.get("type") == "text" and isinstance(item.get("text"), str)


__all__ = [
    "AGENT",
    "GatewayPruner",
    "GatewaySettings",
    "Identity",
    "SCOPE_ARGUMENT",
    "add_basis",
    "scope_of",
    "with_basis",
]


if __name__ == "__main__":
    raise SystemExit(main())
