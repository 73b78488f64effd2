"""Run the real OpenCode CLI offline: install it, seed its config folder, one ``opencode run``.

- ``ensure_opencode_cli()``: ``opencode-ai@OPENCODE_VERSION`` from npm (the package ships
  the native binary as its platform dependency) into ``<cache>/opencode-<version>/``, once,
  under a lock, renamed into place only when ``opencode --version`` answers.
- ``ensure_plugin_seed()``: ``@opencode-ai/plugin@OPENCODE_VERSION`` installed by npm into
  ``<cache>/opencode-plugin-<version>/`` (``package.json``, ``package-lock.json``,
  ``node_modules``). With a plugin configured, OpenCode npm-installs that package into its
  config folder at start and, offline, hangs there (FACTS-opencode.md): ``seed_config``
  copies the three into ``$HOME/.config/opencode/`` first (hard links), so nothing is
  downloaded at run time.
- ``write_config(project, api_url, fetch_bin, plugins)``: the project's ``opencode.json``:
  the scripted provider, ``autoupdate: false``, mcp-server-fetch as server ``docs``
  reaching loopback pages, the plugins (``file://`` URLs).
- ``run_opencode(...)``: ``opencode run [--continue] PROMPT`` with a minimal environment
  (no update check, no models.dev fetch, every proxy a closed loopback port so that
  nothing but loopback is reached) and no stdin.

``<cache>`` is ``$TOOLPRUNE_E2E_CACHE`` or ``~/.cache/toolprune-e2e`` (gemini_harness).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gemini_harness import SetupError, _locked, _run_install, cache_dir

#: The pinned OpenCode (npm ``opencode-ai``). FACTS-opencode.md was established with it.
OPENCODE_VERSION = "1.18.33"
PROVIDER = "scripted"
MODEL = "m"


def _npm_folder(name: str, packages: list[str], check) -> Path:
    """``<cache>/<name>/``: ``npm install packages`` into a fresh folder, ``check(folder)``
    (raises SetupError), then renamed into place with an ``.ok`` stamp; once, under a lock."""
    dest = cache_dir() / name
    with _locked(name):
        if (dest / ".ok").exists():
            return dest
        npm = shutil.which("npm")
        if npm is None:
            raise SetupError("npm not found (OpenCode's packages need npm)")
        tmp = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=cache_dir()))
        tmp.chmod(0o755)
        try:
            (tmp / "package.json").write_text("{}\n")
            _run_install([npm, "install", "--prefix", str(tmp), "--no-audit", "--no-fund", "--loglevel=error", "--save-exact", *packages])
            check(tmp)
            (tmp / ".ok").write_text(" ".join(packages) + "\n")
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return dest


def ensure_opencode_cli(version: str = OPENCODE_VERSION) -> Path:
    """``opencode-ai@version`` installed into the cache once; returns ``opencode``."""

    def check(folder: Path) -> None:
        exe = folder / "node_modules" / ".bin" / "opencode"
        p = subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                           env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(folder)})
        if p.returncode != 0 or version not in p.stdout:
            raise SetupError(f"opencode --version: {p.stdout} {p.stderr}")

    return _npm_folder(f"opencode-{version}", [f"opencode-ai@{version}"], check) / "node_modules" / ".bin" / "opencode"


def ensure_plugin_seed(version: str = OPENCODE_VERSION) -> Path:
    """``@opencode-ai/plugin@version`` installed by npm into a folder of the cache, once
    (its ``package.json`` lists it, as OpenCode's own install would)."""

    def check(folder: Path) -> None:
        if json.loads((folder / "package.json").read_text()).get("dependencies", {}).get("@opencode-ai/plugin") is None:
            raise SetupError("npm did not record @opencode-ai/plugin in package.json")
        if not (folder / "node_modules" / "@opencode-ai" / "plugin" / "package.json").exists():
            raise SetupError("npm did not install @opencode-ai/plugin")

    return _npm_folder(f"opencode-plugin-{version}", [f"@opencode-ai/plugin@{version}"], check)


def ensure_readability(fetch_bin: Path) -> Path:
    """readabilipy's Readability.js dependencies (inside the fetch venv), installed by npm once.

    Without them mcp-server-fetch's readabilipy runs ``npm install`` on the first fetch, at
    run time, its output on the server's stdout (the MCP stream), and a failing install
    raises, so the fetch fails. Provisioned here with the registry, as the other tools are.
    """
    (jsdir,) = (fetch_bin.parent / "lib").glob("python3*/site-packages/readabilipy/javascript")
    with _locked("readabilipy-" + fetch_bin.parent.name):
        if not (jsdir / "node_modules").exists():
            npm = shutil.which("npm")
            if npm is None:
                raise SetupError("npm not found")
            p = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--loglevel=error"], cwd=jsdir, capture_output=True,
                               text=True, timeout=900, stdin=subprocess.DEVNULL)
            if p.returncode != 0:
                raise SetupError(f"npm install in {jsdir}: {p.stdout[-2000:]} {p.stderr[-2000:]}")
    return jsdir


def seed_config(home: Path, seed: Path) -> Path:
    """``$HOME/.config/opencode`` with the seed's package.json, lock and node_modules."""
    folder = home / ".config" / "opencode"
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(seed / name, folder / name)
    shutil.copytree(seed / "node_modules", folder / "node_modules", copy_function=os.link, symlinks=True)
    return folder


def write_config(project: Path, api_url: str, fetch_bin: Path, plugins: list[str]) -> Path:
    """The project's ``opencode.json``: offline, the scripted provider, server ``docs``, ``plugins``."""
    project.mkdir(parents=True, exist_ok=True)
    config = {
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": False,
        "share": "disabled",
        "model": f"{PROVIDER}/{MODEL}",
        "enabled_providers": [PROVIDER],
        "provider": {PROVIDER: {
            "npm": "@ai-sdk/openai-compatible",
            "name": "scripted",
            "options": {"baseURL": api_url, "apiKey": "test"},
            "models": {MODEL: {"name": MODEL, "tool_call": True, "limit": {"context": 200000, "output": 8000}}},
        }},
        "mcp": {"docs": {"type": "local", "command": [str(fetch_bin / "mcp-server-fetch"), "--allow-private-ips", "--ignore-robots-txt"],
                         "timeout": 60000}},
        "plugin": plugins,
    }
    path = project / "opencode.json"
    path.write_text(json.dumps(config, indent=2) + "\n")
    return path


def env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    out = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8", "TERM": "dumb",
           "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1",
           # No network but loopback: a download attempt fails (OpenCode's start-up install of
           # @opencode-ai/plugin hangs then: the seed is what keeps the run offline).
           "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1,localhost",
           "NO_COLOR": "1"}
    out.update(extra or {})
    return out


@dataclass
class OpenCodeRun:
    returncode: int
    stdout: str
    stderr: str


def run_opencode(exe: Path, prompt: str, *, home: Path, cwd: Path, resume: bool = False,
                 extra_env: dict[str, str] | None = None, timeout: int = 240) -> OpenCodeRun:
    """One headless ``opencode run`` (``--continue`` continues the latest session)."""
    cmd = [str(exe), "run"] + (["--continue"] if resume else []) + [prompt]
    p = subprocess.run(cmd, cwd=cwd, env=env(home, extra_env), capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return OpenCodeRun(p.returncode, p.stdout, p.stderr)
