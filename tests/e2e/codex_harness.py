"""Run the real Codex CLI offline: install it, a scratch CODEX_HOME, one ``codex exec`` run.

- ``ensure_codex_cli()``: ``@openai/codex@CODEX_VERSION`` from npm (the package ships the
  native binary as its platform dependency) into ``<cache>/codex-<version>/``, once, under a
  lock, renamed into place only when ``codex --version`` answers; returns ``codex``.
- ``write_config(codex_home, api_url, fetch_bin)``: the offline ``config.toml``: the scripted
  provider, no update check, ``mcp_optional_startup_grace_ms = 0`` (else ``codex exec``
  builds the first tool list after 1 s, without a server still starting),
  and
  mcp-server-fetch as server ``docs`` reaching loopback pages.
- ``run_codex(...)``: ``codex exec [resume --last] --skip-git-repo-check
  --dangerously-bypass-approvals-and-sandbox PROMPT`` with a minimal environment and no
  stdin (exec reads stdin when it is open). Never ``--dangerously-bypass-hook-trust``.
- ``hooks_list(...)``: ``codex app-server``'s ``hooks/list`` (key, currentHash, trustStatus
  of every hook), the client's own view of what is trusted.

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

#: The pinned Codex CLI (npm ``@openai/codex``). FACTS-codex.md was established with it.
CODEX_VERSION = "0.171.0"
MODEL = "gpt-test"
KEY_VARIABLE = "SCRIPTED_KEY"


def ensure_codex_cli(version: str = CODEX_VERSION) -> Path:
    """``@openai/codex@version`` installed into the cache once; returns ``codex``."""
    dest = cache_dir() / f"codex-{version}"
    exe = dest / "node_modules" / ".bin" / "codex"
    with _locked(f"codex-{version}"):
        if (dest / ".ok").exists() and exe.exists():
            return exe
        npm = shutil.which("npm")
        if npm is None:
            raise SetupError("npm not found (Codex CLI's package needs npm)")
        tmp = Path(tempfile.mkdtemp(prefix=f"codex-{version}.", dir=cache_dir()))
        tmp.chmod(0o755)
        _run_install([npm, "install", "--prefix", str(tmp), "--no-audit", "--no-fund", "--loglevel=error",
                      f"@openai/codex@{version}"])
        tmp_exe = tmp / "node_modules" / ".bin" / "codex"
        p = subprocess.run([str(tmp_exe), "--version"], capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        if p.returncode != 0 or version not in p.stdout:
            raise SetupError(f"codex --version: {p.stdout} {p.stderr}")
        (tmp / ".ok").write_text(version + "\n")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
        return dest / "node_modules" / ".bin" / "codex"


def write_config(codex_home: Path, api_url: str, fetch_bin: Path) -> Path:
    """The user's offline ``config.toml`` (before ``toolprune install codex`` edits it)."""
    codex_home.mkdir(parents=True, exist_ok=True)
    path = codex_home / "config.toml"
    path.write_text(
        "# the test's Codex settings\n"
        f'model = "{MODEL}"\n'
        'model_provider = "scripted"\n'
        "check_for_update_on_startup = false\n"
        "mcp_optional_startup_grace_ms = 0\n"
        # The scripted model has no metadata: Codex's fallback budget would cut a whole
        # page in the middle (case e compares the page the model got with the original).
        "tool_output_token_limit = 20000\n"

        "\n[model_providers.scripted]\n"
        'name = "scripted"\n'
        f'base_url = "{api_url}"\n'
        'wire_api = "responses"\n'
        f'env_key = "{KEY_VARIABLE}"\n'
        "\n[mcp_servers.docs]\n"
        f'command = "{fetch_bin / "mcp-server-fetch"}"\n'
        'args = ["--allow-private-ips", "--ignore-robots-txt"]\n'
    )
    return path


def env(home: Path, codex_home: Path) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "CODEX_HOME": str(codex_home),
            KEY_VARIABLE: "test", "LANG": "C.UTF-8", "TERM": "dumb"}


@dataclass
class CodexRun:
    returncode: int
    stdout: str
    stderr: str


def run_codex(exe: Path, prompt: str, *, home: Path, codex_home: Path, cwd: Path, resume: bool = False,
              timeout: int = 240) -> CodexRun:
    """One headless ``codex exec`` (``resume --last`` continues the latest conversation)."""
    cmd = [str(exe), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
    cmd += ["resume", "--last", prompt] if resume else [prompt]
    p = subprocess.run(cmd, cwd=cwd, env=env(home, codex_home), capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return CodexRun(p.returncode, p.stdout, p.stderr)


def hooks_list(exe: Path, *, home: Path, codex_home: Path, cwd: Path) -> list[dict]:
    """Every hook Codex discovered for ``cwd`` (``codex app-server``'s ``hooks/list``)."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"clientInfo": {"name": "toolprune-e2e", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [str(cwd)]}},
    ]
    proc = subprocess.Popen([str(exe), "app-server"], cwd=cwd, env=env(home, codex_home), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdin and proc.stdout
        for line in lines:
            proc.stdin.write(json.dumps(line) + "\n")
        proc.stdin.flush()
        for line in proc.stdout:
            msg = json.loads(line)
            if msg.get("id") == 2:
                return [h for entry in msg["result"]["data"] for h in entry["hooks"]]
        raise AssertionError("codex app-server closed without answering hooks/list")
    finally:
        proc.kill()
        proc.wait(timeout=30)
