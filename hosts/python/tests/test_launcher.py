"""The ``toolprune`` command of the platform-independent wheel
(``_toolprune_launcher``, the console script), which has no native binary
(issue 23 §1): ``hook AGENT`` reads and discards the event and gives the
agent's "no change" answer, exit 0, nothing on stderr, also when stdin never
ends (it stops reading after 5 s) and when wasmtime cannot be imported
(deciding imports neither it nor the ``toolprune`` package); the binary's
other commands exit 1 saying there is no native binary; ``prune`` is
:func:`toolprune.cli.main`'s, byte for byte."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

from conftest import REPO, shared_dir

FIXTURES = REPO / "tests" / "fixtures" / "hooks"
SCRIPT = Path(sys.executable).parent / "toolprune"
"""The console script pip wrote for this venv."""

# Run the launcher as pip's console script does, with wasmtime made
# unimportable unless told otherwise: deciding must not need it.
NO_WASMTIME = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "wasmtime" or name.startswith("wasmtime."):
            raise ImportError("wasmtime blocked by the test")
sys.meta_path.insert(0, Block())
from _toolprune_launcher import main
sys.exit(main())
"""


def launch(args: List[str], stdin: bytes, block_wasmtime: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    code = NO_WASMTIME if block_wasmtime else "import sys\nfrom _toolprune_launcher import main\nsys.exit(main())\n"
    return subprocess.run(
        [sys.executable, "-c", code, *args], input=stdin, capture_output=True, timeout=timeout, cwd=Path(__file__).parent
    )


def fixture(agent: str, name: str) -> bytes:
    return (FIXTURES / agent / name).read_bytes()


@pytest.mark.parametrize(
    "agent, name, answer",
    [
        ("claude-code", "post_tool_use.mcp_fetch.json", b""),
        ("claude-code", "user_prompt_submit.json", b""),
        ("codex", "post_tool_use.mcp_fetch.json", b""),
        ("gemini", "AfterTool.mcp_fetch_fetch.stdin.json", b"{}"),
        ("cursor", "postToolUse.mcp.stdin.json", b"{}"),
        ("cursor", "beforeSubmitPrompt.stdin.json", b'{"continue":true}'),
    ],
)
def test_hook_without_the_binary_answers_no_change_exit_0_nothing_on_stderr(agent: str, name: str, answer: bytes) -> None:
    for args in (["hook", agent], ["hook", agent, "--plugin"]):
        done = launch(args, fixture(agent, name))
        assert (done.returncode, done.stdout, done.stderr) == (0, answer, b""), args


def test_a_mistyped_hook_command_answers_nothing_exit_0() -> None:
    for args in (["hook"], ["hook", "vim"], ["hook", "gemini", "extra", "words"]):
        done = launch(args, b"{}")
        assert (done.returncode, done.stdout, done.stderr) == (0, b"", b""), args


def test_hook_stops_reading_a_stdin_that_never_ends() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", NO_WASMTIME, "hook", "gemini"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert child.stdin is not None
    child.stdin.write(b'{"hook_event_name": "AfterTool", ')
    child.stdin.flush()
    try:
        child.wait(timeout=30)  # it reads for 5 s (stdin stays open: no communicate())
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        pytest.fail("the hook kept reading stdin for 30 s")
    finally:
        child.stdin.close()
    assert child.stdout is not None and child.stderr is not None
    stdout, stderr = child.stdout.read(), child.stderr.read()
    assert (child.returncode, stdout, stderr) == (0, b"{}", b"")


@pytest.mark.parametrize("command", ["mcp", "mcp-proxy", "install", "uninstall", "doctor", "stats"])
def test_the_binary_only_commands_exit_1_saying_there_is_no_native_binary(command: str) -> None:
    done = launch([command, "claude-code"], b"")
    assert done.returncode == 1
    assert done.stdout == b""
    message = done.stderr.decode()
    assert message.startswith(f"toolprune {command}: ") and "no native toolprune binary" in message
    assert "only prune, split and route work" in message


def test_prune_is_the_python_cli_byte_for_byte() -> None:
    page = shared_dir() / "corpus" / "mcp-spec-2025-11-25-transports.mdx"
    request = "How does a client resume a broken Streamable HTTP SSE stream? Which header carries the last event ID?"
    args = ["prune", "--threshold", "0.3", "--request", request, str(page)]
    through = launch(args, b"", block_wasmtime=False)
    direct = subprocess.run([sys.executable, "-m", "toolprune", *args], capture_output=True, cwd=Path(__file__).parent)
    assert through.returncode == direct.returncode == 0
    assert (through.stdout, through.stderr) == (direct.stdout, direct.stderr)
    assert len(through.stdout) < page.stat().st_size, "it pruned"


@pytest.mark.skipif(not SCRIPT.exists(), reason="no console script in this environment")
def test_the_console_script_is_the_launcher() -> None:
    done = subprocess.run([str(SCRIPT), "hook", "gemini"], input=b"{}", capture_output=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"{}", b"")
