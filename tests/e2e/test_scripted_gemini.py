"""The scripted loopback Gemini API (scripted_gemini.py) on its own, without the CLI: what a
client receives for each endpoint, and what the server records. Fast (no installs).

Run: ``tests/e2e/gemini-e2e.sh`` runs it too, or ``python3 -m pytest tests/e2e/test_scripted_gemini.py``.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scripted_gemini import (  # noqa: E402
    ScriptedGemini,
    function_call_chunk,
    function_responses,
    last_user_text,
    text_chunk,
)

BODY = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}


def post(url: str, body: dict, headers: dict | None = None) -> tuple[int, str, bytes]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.headers.get("content-type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("content-type", ""), e.read()


def test_stream_generate_content_sends_each_chunk_as_one_sse_data_event():
    chunks = [text_chunk("Hel", finish=False), function_call_chunk("mcp_fetch_fetch", {"url": "u"}, call_id="c1")]
    with ScriptedGemini(lambda call: chunks) as s:
        status, ctype, raw = post(f"{s.url}/v1beta/models/m:streamGenerateContent?alt=sse", BODY)
    assert status == 200 and ctype == "text/event-stream"
    events = [e for e in raw.decode().split("\r\n\r\n") if e]
    assert [json.loads(e.removeprefix("data: ")) for e in events] == chunks


def test_generate_content_merges_the_chunks_into_one_response():
    with ScriptedGemini(lambda call: [text_chunk("a", finish=False), text_chunk("b")]) as s:
        status, _, raw = post(f"{s.url}/v1beta/models/m:generateContent", BODY)
    out = json.loads(raw)
    assert status == 200
    assert out["candidates"][0]["content"]["parts"] == [{"text": "a"}, {"text": "b"}]
    assert out["candidates"][0]["finishReason"] == "STOP"


def test_every_request_is_recorded_with_the_api_key_redacted():
    with ScriptedGemini(lambda call: text_chunk("x")) as s:
        post(f"{s.url}/v1beta/models/gemini-x:countTokens", BODY, {"x-goog-api-key": "secret"})
        post(f"{s.url}/v1beta/models/gemini-x:streamGenerateContent?alt=sse", BODY, {"x-goog-api-key": "secret"})
        status, _, raw = post(f"{s.url}/v1beta/unknown", BODY)
    assert [(c.model, c.action) for c in s.calls] == [("gemini-x", "countTokens"),
                                                      ("gemini-x", "streamGenerateContent"), ("", "")]
    assert all(c.headers["x-goog-api-key"] == "<redacted>" for c in s.calls[:2])
    assert s.calls[1].query == {"alt": ["sse"]} and s.calls[1].body == BODY
    assert json.loads(s.calls[0].raw) == BODY
    assert status == 404 and b"no route" in raw
    assert [c.action for c in s.generation_calls()] == ["streamGenerateContent"]


def test_count_tokens_answers_a_positive_total():
    with ScriptedGemini(lambda call: []) as s:
        _, _, raw = post(f"{s.url}/v1beta/models/m:countTokens", BODY)
    assert json.loads(raw)["totalTokens"] >= 1


def test_a_script_that_raises_gives_500_and_the_error_is_recorded():
    def boom(call):
        raise ValueError("no answer scripted")
    with ScriptedGemini(boom) as s:
        status, _, raw = post(f"{s.url}/v1beta/models/m:streamGenerateContent?alt=sse", BODY)
    assert status == 500 and b"no answer scripted" in raw
    assert s.calls[0].error == "ValueError: no answer scripted"


def test_a_non_loopback_host_is_refused():
    with pytest.raises(ValueError):
        ScriptedGemini(lambda call: [], host="0.0.0.0").start()


def test_request_helpers_read_function_responses_and_the_last_user_text():
    body = {"contents": [
        {"role": "user", "parts": [{"text": "fetch it"}]},
        {"role": "model", "parts": [{"functionCall": {"name": "t", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"id": "1", "name": "t", "response": {"output": "x"}}}]},
    ]}
    assert function_responses(body) == [{"id": "1", "name": "t", "response": {"output": "x"}}]
    assert last_user_text(body) == ""
    assert last_user_text(BODY) == "hello"
