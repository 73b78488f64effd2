"""Captured hook payloads as JSON fixtures under ``tests/fixtures/hooks/claude-code/``.

The e2e tests compare each live payload with its fixture by *shape* (`shape`:
the same keys, the same JSON types, recursively; values may differ — session
ids, ports, durations change every run). ``TOOLPRUNE_E2E_UPDATE_FIXTURES=1``
rewrites the fixtures from the live payloads instead.

Before writing, `Scrubber` replaces this machine's paths with placeholders
(``/home/user``, ``/home/user/project``, ``/tmp``) and the loopback site's
port with 8000, so the files are the same on every machine; values of keys
ending in ``_TOKEN`` (Claude Code's per-session messaging token) become
``<redacted>``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hooks" / "claude-code"
UPDATE = os.environ.get("TOOLPRUNE_E2E_UPDATE_FIXTURES") == "1"

PLACEHOLDER_HOME = "/home/user"
PLACEHOLDER_PROJECT = "/home/user/project"
PLACEHOLDER_TMP = "/tmp"


class Scrubber:
    """Replaces a scratch folder's paths (and loopback ports) inside JSON values."""

    def __init__(self, home: Path, project: Path, tmp: Path, root: Path):
        # Longest first: the project and tmp folders live under the scratch root.
        self._pairs = [
            (str(project), PLACEHOLDER_PROJECT),
            # Claude Code's per-project folder: every non-alphanumeric becomes "-".
            (re.sub(r"[^A-Za-z0-9]", "-", str(project)), re.sub(r"[^A-Za-z0-9]", "-", PLACEHOLDER_PROJECT)),
            (str(home), PLACEHOLDER_HOME),
            (str(tmp), PLACEHOLDER_TMP),
            (str(root), "/home/user/scratch"),
        ]
        self._port = re.compile(r"(https?://127\.0\.0\.1):\d+")

    def text(self, s: str) -> str:
        for old, new in self._pairs:
            s = s.replace(old, new)
        return self._port.sub(r"\1:8000", s)

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {self.text(k): "<redacted>" if k.endswith("_TOKEN") else self(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self(v) for v in value]
        if isinstance(value, str):
            return self.text(value)
        return value


def shape(value: Any) -> Any:
    """The JSON shape of ``value``: dict keys with their shapes, a list's element
    shapes (deduplicated, in order), else the type name."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        shapes: list[Any] = []
        for v in value:
            s = shape(v)
            if s not in shapes:
                shapes.append(s)
        return shapes
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return "str"


def check(name: str, payload: Any) -> None:
    """Assert ``payload`` has the shape of fixture ``name`` (or write it when updating).

    ``payload`` must already be scrubbed. Raises AssertionError naming the file
    when the fixture is missing or its shape differs.
    """
    path = FIXTURES / f"{name}.json"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing: run with TOOLPRUNE_E2E_UPDATE_FIXTURES=1"
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert shape(payload) == shape(stored), f"live payload no longer has the shape of {path.name}"
