"""toolprune as a ContextForge plugin (``mcp-contextforge-gateway`` ≥ 1.0.7,
its ``cpex`` plugin framework; ``docs/gateway.md``).

Enable it in the gateway's plugin configuration (``PLUGINS_ENABLED=true``,
``PLUGINS_CONFIG_FILE=plugins/config.yaml``)::

    plugins:
      - name: "toolprune"
        kind: "toolprune.contextforge.ToolprunePlugin"
        hooks: ["tool_pre_invoke", "tool_post_invoke"]
        mode: "transform"      # modifies payloads, never blocks a call
        priority: 900          # after other transforms (redaction first)
        config:
          prunable: ["*fetch*"]
          redis_url: "redis://127.0.0.1:6379/0"

- ``tool_pre_invoke``: removes the basis argument (``user_request``) from a
  prunable tool's arguments and keeps it, with the arguments as they go
  upstream, for the call (in the process, by the call's request id); gives
  the ``omitted`` tool the caller's scope.
- ``tool_post_invoke``: prunes the text items of a prunable tool's result
  (:meth:`toolprune.gateway.GatewayPruner.prune`) on that basis, the
  arguments applying the repeat gate (the same call again after a pruned
  one passes unpruned); any error leaves the result as the server returned it.

Identity: ``context.global_context.user_context`` (``user_id`` / ``email``,
``team_id``) or, without one, ``global_context.user`` (the authenticated
email the gateway puts there).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import OrderedDict
from typing import Any, Dict, List, Optional, Tuple

from cpex.framework import (
    Plugin,
    PluginConfig,
    PluginContext,
    ToolPostInvokePayload,
    ToolPostInvokeResult,
    ToolPreInvokePayload,
    ToolPreInvokeResult,
)

from .gateway import GatewayPruner, GatewaySettings, Identity
from .pruner import Pruner

try:
    from cpex.framework.constants import TOOL_METADATA
except ImportError:  # pragma: no cover - older cpex
    TOOL_METADATA = "tool"

# ContextForge may replace its plugin manager between a call's two hooks (the
# plugin is then made again and the per-plugin context is a new one), so the
# basis waits for the post hook in the process, by the call's request id
# (unique per call), bounded; and plugins made from one configuration share one
# GatewayPruner (the component, the conversations).
_LOCK = threading.Lock()
_BASES: "OrderedDict[str, Tuple[float, Optional[str], Dict[str, Any]]]" = OrderedDict()
_BASES_MAX = 4096
_BASES_TTL_S = 600.0
_GATEWAYS: Dict[str, GatewayPruner] = {}


def _remember(request_id: str, basis: Optional[str], arguments: Dict[str, Any]) -> None:
    """Keeps a prunable call's basis and upstream arguments until its post hook."""
    now = time.monotonic()
    with _LOCK:
        _BASES[request_id] = (now, basis, arguments)
        _BASES.move_to_end(request_id)
        while _BASES and (len(_BASES) > _BASES_MAX or next(iter(_BASES.values()))[0] < now - _BASES_TTL_S):
            _BASES.popitem(last=False)


def _recall(request_id: str) -> Tuple[Optional[str], Optional[Dict[str, Any]]]:
    """The basis and arguments :func:`_remember` kept for the call (once), or (None, None)."""
    with _LOCK:
        found = _BASES.pop(request_id, None)
    return (None, None) if found is None else (found[1], found[2])
log = logging.getLogger("toolprune")


class ToolprunePlugin(Plugin):
    """The plugin (``kind: toolprune.contextforge.ToolprunePlugin``).
    ``config.config``: :class:`toolprune.gateway.GatewaySettings`'s keys.
    Raises :class:`ValueError` at load on a bad configuration (the gateway
    then reports the plugin as failed to load)."""

    def __init__(self, config: PluginConfig) -> None:
        super().__init__(config)
        key = json.dumps(config.config or {}, sort_keys=True, default=str)
        with _LOCK:
            gateway = _GATEWAYS.get(key)
        if gateway is None:
            settings = GatewaySettings.from_mapping(config.config)
            secret: Optional[bytes] = None
            if not settings.scope_secret:
                secret = _gateway_secret()
            gateway = GatewayPruner(Pruner.load(), settings, secret=secret)
            with _LOCK:
                gateway = _GATEWAYS.setdefault(key, gateway)
        self.gateway = gateway

    async def tool_pre_invoke(self, payload: ToolPreInvokePayload, context: PluginContext) -> ToolPreInvokeResult:
        """Strips the basis argument (kept for the post hook) / sets the ``omitted`` scope."""
        try:
            names = _names(payload.name, context)
            args, basis = self.gateway.strip(names, payload.args, _identity(context))
            if self.gateway.is_prunable(names):
                upstream = args if args is not None else dict(payload.args or {})
                _remember(context.global_context.request_id, basis, upstream)
            if args is None:
                return ToolPreInvokeResult(continue_processing=True)
            return ToolPreInvokeResult(continue_processing=True, modified_payload=payload.model_copy(update={"args": args}))
        except Exception as err:  # never block a call
            log.warning("tool prune: agent=contextforge outcome=failed reason=pre_invoke error=%s", type(err).__name__)
            return ToolPreInvokeResult(continue_processing=True)

    async def tool_post_invoke(self, payload: ToolPostInvokePayload, context: PluginContext) -> ToolPostInvokeResult:
        """Prunes the result's text (or leaves it exactly as it came)."""
        try:
            names = _names(payload.name, context)
            basis, arguments = _recall(context.global_context.request_id)
            pruned = await self.gateway.prune(
                names, payload.result, basis if isinstance(basis, str) else None, _identity(context), arguments
            )
        except Exception as err:  # pragma: no cover - prune fails open itself
            log.warning("tool prune: agent=contextforge outcome=failed reason=post_invoke error=%s", type(err).__name__)
            pruned = None
        if pruned is None:
            return ToolPostInvokeResult(continue_processing=True)
        return ToolPostInvokeResult(continue_processing=True, modified_payload=ToolPostInvokePayload(name=payload.name, result=pruned))


def _names(name: str, context: PluginContext) -> List[str]:
    """The gateway's name of the tool, then its original (upstream) name."""
    names = [name]
    meta = context.global_context.metadata.get(TOOL_METADATA)
    original = getattr(meta, "original_name", None) or (meta.get("original_name") if isinstance(meta, dict) else None)
    if isinstance(original, str) and original and original not in names:
        names.append(original)
    return names


def _identity(context: PluginContext) -> Identity:
    g = context.global_context
    uc = g.user_context
    if uc is not None:
        return Identity(user=uc.user_id or uc.email, team=uc.team_id)
    user: Any = g.user
    if isinstance(user, dict):
        user = user.get("email") or user.get("id") or user.get("sub")
    return Identity(user=user if isinstance(user, str) and user else None)


def _gateway_secret() -> Optional[bytes]:
    """The gateway's ``AUTH_ENCRYPTION_SECRET`` (the same on every instance), if readable."""
    try:
        from mcpgateway.config import settings  # type: ignore[import-not-found]

        value = settings.auth_encryption_secret.get_secret_value()
        return value.encode("utf-8") if value else None
    except Exception:
        return None


__all__ = ["ToolprunePlugin"]
