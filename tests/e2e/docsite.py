"""A loopback test site serving real documents as HTML, for ``mcp-server-fetch`` to fetch.

`Site(pages)` listens on a free 127.0.0.1 port (threaded) and serves ``pages``
(``{"/path": html_str}``) as ``text/html; charset=utf-8``, ``/robots.txt`` as
"allow everything", and 404 otherwise. Every request path is recorded in
``site.hits``.

`corpus_pages(corpus_dir, names, python)` builds the pages from documents of
``../shared/corpus``: each markdown file rendered to an HTML page by
``markdown-it-py`` (CommonMark, tables on), under ``/docs/<file stem>.html``, with
the first ``# heading`` as ``<title>``. Rendering runs in ``python`` — the e2e
venv's interpreter, which has markdown-it-py pinned — so the test interpreter
needs nothing beyond the standard library and pytest.

``mcp-server-fetch`` then turns the HTML back into markdown (readabilipy +
markdownify), so the tool result the model sees is the document, re-encoded by
the real pipeline.
"""

from __future__ import annotations

import html
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable

__all__ = ["Site", "corpus_pages", "render_markdown"]

_RENDER = r"""
import json, sys
from markdown_it import MarkdownIt
md = MarkdownIt("commonmark").enable("table")
docs = json.load(sys.stdin)
json.dump({k: md.render(v) for k, v in docs.items()}, sys.stdout)
"""


def render_markdown(docs: dict[str, str], python: str) -> dict[str, str]:
    """Render ``{key: markdown}`` to ``{key: html body}`` with markdown-it-py in ``python``.

    Raises `RuntimeError` (with the interpreter's stderr) when rendering fails.
    """
    p = subprocess.run([python, "-c", _RENDER], input=json.dumps(docs), capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise RuntimeError(f"markdown rendering failed in {python}: {p.stderr.strip()[-2000:]}")
    return json.loads(p.stdout)


def _strip_frontmatter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[end + 5 :]
    return text


def _title(markdown: str, fallback: str) -> str:
    for line in markdown.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return fallback


def corpus_pages(corpus_dir: Path, names: Iterable[str], python: str) -> dict[str, str]:
    """HTML pages ``{"/docs/<stem>.html": page}`` for the named corpus documents.

    Each page is a whole HTML document: ``<title>``, then the rendered markdown
    inside ``<main><article>``, as a documentation site serves it.
    """
    sources = {}
    for name in names:
        text = (corpus_dir / name).read_text(encoding="utf-8").replace("\r\n", "\n")
        sources[name] = _strip_frontmatter(text)
    bodies = render_markdown(sources, python)
    pages = {}
    for name, body in bodies.items():
        stem = name.rsplit(".", 1)[0]
        title = html.escape(_title(sources[name], stem))
        pages[f"/docs/{stem}.html"] = (
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{title}</title>\n</head>\n<body>\n<nav><a href=\"/\">Docs home</a></nav>\n"
            f"<main>\n<article>\n{body}</article>\n</main>\n<footer>Test site</footer>\n</body>\n</html>\n"
        )
    return pages


class Site:
    """A loopback HTTP server for ``pages``; use as a context manager.

    ``url`` is ``http://127.0.0.1:PORT``; ``hits`` lists the requested paths.
    """

    def __init__(self, pages: dict[str, str]):
        self.pages = dict(pages)
        self.hits: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = self.path.split("?")[0]
                site.hits.append(path)
                if path == "/robots.txt":
                    body, ctype, status = b"User-agent: *\nAllow: /\n", "text/plain", 200
                elif path in site.pages:
                    body, ctype, status = site.pages[path].encode("utf-8"), "text/html; charset=utf-8", 200
                else:
                    body, ctype, status = b"not found\n", "text/plain", 404
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "Site":
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="e2e-site", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(5)
