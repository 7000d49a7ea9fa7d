"""The UI server's HTTP surface: CSP on every answer, the Host guard, bad input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpsniff.ui.library import Library
from mcpsniff.ui.server import SESSION_LIST_LIMIT, UiServer
from tests.ui.support import copy_gallery, many_sessions_trace, ui_get, ui_server


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("served")
    copy_gallery(folder, "stdout-pollution.jsonl")
    (folder / "notes.jsonl").write_text("not a trace\n")
    with ui_server(folder) as served:
        yield served


def get(url: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """GET with the run's token, as the page's own requests are."""
    return ui_get(url, {"Host": host} if host is not None else None)


def test_every_page_and_answer_carries_a_strict_csp(url: str) -> None:
    for path in ("", "static/app.js", "static/app.css", "api/sessions"):
        status, headers, _ = get(url + path)
        assert status == 200, path
        csp = headers["Content-Security-Policy"]
        assert "default-src 'none'" in csp and "script-src 'self'" in csp
        assert "unsafe" not in csp
        assert headers["X-Content-Type-Options"] == "nosniff"


def test_sessions_and_problems(url: str) -> None:
    _, _, body = get(url + "api/sessions")
    snapshot = json.loads(body)
    (session,) = snapshot["sessions"]
    assert session["file"] == "stdout-pollution.jsonl"
    assert session["findings"]["error"] == 2
    (problem,) = snapshot["problems"]
    assert problem["file"].endswith("notes.jsonl") and "not an mcpsniff trace" in problem["error"]
    _, _, rows = get(url + f"api/session/{session['id']}/rows?from=1&limit=2")
    page = json.loads(rows)
    assert page["from"] == 1 and [r["n"] for r in page["rows"]] == [1, 2]


def test_a_foreign_host_is_refused(url: str) -> None:
    status, _, _ = get(url + "api/sessions", host="evil.example:80")
    assert status == 421
    port = url.rsplit(":", 1)[1].strip("/")
    assert get(url + "api/sessions", host=f"localhost:{port}")[0] == 200


def test_bad_requests_get_clear_answers(url: str) -> None:
    assert get(url + "static/..%2f..%2fcli.py")[0] == 404
    assert get(url + "static/index.html")[0] == 404
    assert get(url + "api/session/99:0/rows")[0] == 404
    assert get(url + "api/session/nonsense/rows")[0] == 404
    _, _, body = get(url + "api/sessions")
    sid = json.loads(body)["sessions"][0]["id"]
    assert get(url + f"api/session/{sid}/message/12345")[0] == 404
    status, _, body = get(url + f"api/session/{sid}/filter?q=latency%20%3E%20fast")
    answer = json.loads(body)
    assert status == 200 and "bad duration" in answer["error"] and "^" in answer["caret"]
    status, _, body = get(url + f"api/session/{sid}/filter?q=" + "x" * 3000)
    assert "longer than" in json.loads(body)["error"]


def test_host_check_rules() -> None:

    server = UiServer(Library([Path(".")]), "127.0.0.1", 6280)
    assert server.allowed_host("127.0.0.1:6280")
    assert server.allowed_host("localhost")
    assert server.allowed_host("[::1]:6280")
    assert not server.allowed_host("attacker.example:6280")
    assert not server.allowed_host(None)
    wildcard = UiServer(Library([Path(".")]), "0.0.0.0", 6280)
    assert wildcard.allowed_host("192.0.2.7:6280")


def test_a_wildcard_address_is_warned_about(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.ui.support import REPO

    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpsniff", "ui", str(tmp_path), "--listen", "0.0.0.0:0"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        second = proc.stderr.readline()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert "warning: listening on 0.0.0.0, not loopback" in first
    assert "serving http://0.0.0.0:" in second
    assert proc.returncode == 0  # SIGTERM stops it cleanly


def test_a_missing_path_is_one_line(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mcpsniff.cli import main

    result = CliRunner().invoke(main, ["ui", str(tmp_path / "nope")])
    assert result.exit_code == 2
    assert result.output.strip() == f"mcpsniff ui: {tmp_path / 'nope'}: no such file or folder"


# The session list of a trace of very many sessions is bounded (see test_library.py).


def test_the_snapshot_is_bounded_and_counts_the_rest(tmp_path: Path) -> None:
    count = SESSION_LIST_LIMIT + 500
    many_sessions_trace(tmp_path / "t.jsonl", count)
    with ui_server(tmp_path) as url:
        for _ in range(100):
            snapshot = json.loads(ui_get(url + "api/sessions")[2])
            if snapshot.get("total") == count:
                break
        assert snapshot["total"] == count
        assert len(snapshot["sessions"]) == SESSION_LIST_LIMIT
        assert snapshot["sessions"][0]["key"] == f"s{count - 1}"


def test_the_stats_a_filter_computed_on_its_way_are_the_sessions(tmp_path: Path) -> None:
    """The filter's pass also sums the session up, and the stats tab answers from it."""
    from mcpsniff.ui.details import json_safe
    from mcpsniff.ui.queries import session_stats
    from mcpsniff.ui.report import load_model

    copy_gallery(tmp_path, "stdout-pollution.jsonl")
    path = tmp_path / "stdout-pollution.jsonl"
    (session,) = load_model(path).sessions.values()
    expected = json.loads(json.dumps(json_safe(session_stats(path, session))))
    with ui_server(tmp_path) as served:
        _, _, body = get(served + "api/sessions")
        sid = json.loads(body)["sessions"][0]["id"]
        status, _, body = get(served + f"api/session/{sid}/filter?q=kind%20%3D%3D%20request")
        assert status == 200 and json.loads(body)["rows"]
        status, _, body = get(served + f"api/session/{sid}/stats")
        assert status == 200 and json.loads(body) == expected
        assert expected["findings"]["error"] == 2


def test_compare_answers_with_the_comparison_and_refuses_what_it_cannot(url: str) -> None:
    _, _, body = get(url + "api/sessions")
    (session,) = json.loads(body)["sessions"]
    sid = session["id"]
    status, headers, body = get(url + f"api/compare?a={sid}&b={sid}")
    assert status == 200 and "default-src 'none'" in headers["Content-Security-Policy"]
    same = json.loads(body)
    # A session beside itself: every request answered alike.
    assert same["differ"] is False and same["total"] == same["same"] > 0
    assert all(r["same"] and r["differences"] == [] for r in same["requests"])
    for query in ("", f"a={sid}", f"a={sid}&b=9:9", "a=x&b=y", f"a={sid}&b={sid}:1"):
        status, _, body = get(url + "api/compare?" + query)
        assert status == 404 and body.startswith(b"no such session"), (query, body)


def test_compare_refuses_a_trace_too_large_to_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio

    from aiohttp.test_utils import make_mocked_request

    import mcpsniff.ui.server as server_module

    (trace,) = copy_gallery(tmp_path, "stdout-pollution.jsonl")
    library = Library([tmp_path])
    library.poll()
    library.poll()
    (session,) = library.sessions()
    called: list[str] = []

    def comparer(*args: object) -> dict[str, object]:
        called.append("yes")
        return {"differ": False}

    server = UiServer(library, "127.0.0.1", 0, comparer=comparer)
    request = make_mocked_request("GET", f"/api/compare?a={session['id']}&b={session['id']}")
    monkeypatch.setattr(server_module, "COMPARE_FILE_LIMIT", trace.stat().st_size - 1)
    answer = asyncio.run(server.compare(request))
    assert json.loads(answer.body) == {
        "error": "stdout-pollution.jsonl is over 0 MiB: compare it with mcpsniff diff"
    }
    assert called == []
    monkeypatch.setattr(server_module, "COMPARE_FILE_LIMIT", trace.stat().st_size)
    answer = asyncio.run(server.compare(request))
    assert json.loads(answer.body) == {"differ": False} and called == ["yes"]


def test_without_a_comparer_compare_is_not_found(tmp_path: Path) -> None:
    from aiohttp.test_utils import make_mocked_request
    from aiohttp.web import HTTPNotFound

    server = UiServer(Library([tmp_path]), "127.0.0.1", 0)
    request = make_mocked_request("GET", "/api/compare?a=0:0&b=0:0")
    import asyncio

    with pytest.raises(HTTPNotFound) as raised:
        asyncio.run(server.compare(request))
    assert raised.value.text == "comparison not available"
