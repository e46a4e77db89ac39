"""The service's guards: bearer token, admission (503 + Retry-After, a candidate budget),
request and idle timeouts, and the warning when it is exposed without a token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest
from sched_helpers import BASE_REQUEST, REPO

pytest.importorskip("fastapi")
httpx = pytest.importorskip("httpx")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

from cotune.errors import InputError
from cotune.serve import ServiceSettings, create_app
from cotune.serve._admission import Admission, Overloaded
from cotune.serve._server import is_loopback

TOKEN = "0123456789abcdef0123456789abcdef"


@pytest.fixture(scope="module")
def secured():
    return TestClient(create_app(ServiceSettings(token=TOKEN)))


def test_health_needs_no_token(secured):
    assert secured.get("/health").json()["status"] == "ok"


@pytest.mark.parametrize("header", [None, "Bearer wrong", f"Bearer {TOKEN}x", f"bearer{TOKEN}", TOKEN, "Basic Zm9vOmJhcg=="])
def test_recommend_without_the_right_token_is_401(secured, header, error_validator):
    r = secured.post("/v1/recommend", json=BASE_REQUEST, headers={} if header is None else {"Authorization": header})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    error_validator.validate(r.json())
    assert r.json()["error"]["code"] == "unauthorized" and TOKEN not in r.text


def test_schema_and_openapi_need_the_token_too(secured):
    assert secured.get("/openapi.json").status_code == 401
    assert secured.get("/v1/schema/error.v1").status_code == 401
    assert secured.get("/v1/schema/error.v1", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_recommend_with_the_token_answers(secured, scheme):
    # The scheme is case-insensitive (RFC 9110 § 11.1); "bearer TOKEN" was a 401.
    r = secured.post("/v1/recommend", json=BASE_REQUEST, headers={"Authorization": f"{scheme} {TOKEN}"})
    assert r.status_code == 200 and r.json()["status"] == "ok"


def test_token_does_not_appear_in_the_settings_repr():
    assert TOKEN not in repr(ServiceSettings(token=TOKEN))


@pytest.mark.parametrize("token", ["", "two words", "tab\there", "x" * 5000])
def test_unusable_tokens_are_refused(token):
    with pytest.raises(ValueError, match="token"):
        ServiceSettings(token=token)


def test_requests_over_the_pending_limit_get_503_with_retry_after(error_validator):
    app = create_app(ServiceSettings(max_pending=1))
    client = TestClient(app)
    with app.state.admission.request():  # one request in progress: the limit
        r = client.post("/v1/recommend", json=BASE_REQUEST)
    assert r.status_code == 503 and int(r.headers["retry-after"]) >= 1
    error_validator.validate(r.json())
    assert r.json()["error"]["code"] == "overloaded"
    assert client.get("/health").status_code == 200
    assert client.post("/v1/recommend", json=BASE_REQUEST).status_code == 200  # the slot is free again


def _hold(adm: Admission, candidates: int, entered: threading.Event, leave: threading.Event) -> None:
    with adm.solve(candidates):
        entered.set()
        leave.wait(timeout=60)


def test_a_solve_waits_while_the_candidate_budget_is_used_and_gives_up_with_overloaded():
    adm = Admission(max_pending=8, candidate_budget=1000, wait_s=0.2)
    entered, leave = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold, args=(adm, 900, entered, leave))
    holder.start()
    try:
        assert entered.wait(timeout=60)
        assert adm.candidates_in_flight == 900
        with adm.solve(100):  # fits beside the running one
            pass
        with pytest.raises(Overloaded, match="candidates"):
            with adm.solve(200):  # does not fit until the first one ends
                pass
    finally:
        leave.set()
        holder.join(timeout=60)
    with adm.solve(1000):
        assert adm.candidates_in_flight == 1000
    assert adm.candidates_in_flight == 0


def test_a_waiting_solve_starts_when_the_running_one_ends():
    adm = Admission(max_pending=8, candidate_budget=1000, wait_s=60)
    entered, leave = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold, args=(adm, 800, entered, leave))
    holder.start()
    assert entered.wait(timeout=60)
    started = threading.Event()

    def second() -> None:
        with adm.solve(800):
            started.set()

    waiter = threading.Thread(target=second)
    waiter.start()
    assert not started.wait(timeout=0.2)  # still blocked behind the budget
    leave.set()
    assert started.wait(timeout=60)
    holder.join(timeout=60)
    waiter.join(timeout=60)


def test_one_solve_over_the_budget_runs_alone():
    adm = Admission(max_pending=1, candidate_budget=10, wait_s=1)
    with adm.solve(10_000):
        assert adm.candidates_in_flight == 10_000


@pytest.mark.parametrize(("host", "loopback"), [("127.0.0.1", True), ("127.8.9.1", True), ("::1", True), ("[::1]", True),
                                                ("localhost", True), ("0.0.0.0", False), ("::", False), ("10.1.2.3", False),
                                                ("example.org", False)])
def test_is_loopback(host, loopback):
    assert is_loopback(host) is loopback


@pytest.mark.parametrize("field", ["request_timeout_s", "idle_timeout_s"])
@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), 10**9])
def test_settings_refuse_absurd_timeouts(field, value):
    with pytest.raises(ValueError, match=field):
        ServiceSettings(**{field: value})


def _cotune(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess:
    code = "import sys; from cotune.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout_s, cwd=REPO)


def test_serve_warns_when_exposed_without_a_token_and_fails_cleanly_when_it_cannot_bind():
    # 192.0.2.1 is TEST-NET-1: never an address of this machine, so nothing is exposed.
    r = _cotune("serve", "--host", "192.0.2.1", "--port", "8000")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 2, r.stderr
    assert "warning" in lines[0] and "without authentication" in lines[0] and "--token-file" in lines[0]
    assert "cannot listen on" in lines[1] and "Traceback" not in r.stderr


@pytest.mark.parametrize(("content", "why"), [(b"", "it is empty"), (b"   \n", "it is empty"),
                                            (b"\xff\xfea\x00", "UTF-16 text"), (b"two words\n", "it holds a space"),
                                            (b"abc\r\ndef\r\n", "it holds several lines"),
                                            ("t\u00f6ken".encode(), "characters other than printable ASCII")])
def test_serve_refuses_an_unusable_token_file_and_says_why(tmp_path, content, why):
    path = tmp_path / "token"
    path.write_bytes(content)
    r = _cotune("serve", "--token-file", str(path), "--port", "8000")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--token-file" in r.stderr and why in r.stderr, r.stderr


def test_a_token_file_saved_with_a_byte_order_mark_holds_the_token_after_it(tmp_path):
    # Notepad's UTF-8 writes EF BB BF first: the file was refused as "not printable ASCII".
    from cotune.cli._serve import read_token

    (tmp_path / "t").write_bytes(b"\xef\xbb\xbf" + TOKEN.encode() + b"\r\n")
    assert read_token(str(tmp_path / "t")) == TOKEN


def test_read_token_strips_the_newline(tmp_path):
    from cotune.cli._serve import read_token

    (tmp_path / "t").write_text(TOKEN + "\n")
    assert read_token(str(tmp_path / "t")) == TOKEN
    with pytest.raises(InputError, match="cannot read"):
        read_token(str(tmp_path / "missing"))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_read_token_refuses_a_pipe_instead_of_waiting_for_a_writer(tmp_path):
    from cotune.cli._serve import read_token

    os.mkfifo(tmp_path / "t")
    with pytest.raises(InputError, match="is not a regular file"):
        read_token(str(tmp_path / "t"))


# --- a real server on loopback: slow clients are cut off, /health keeps answering -----------


def _closed_within(sock: socket.socket, deadline_s: float) -> bytes:
    """Everything the server sent until it closed ``sock`` (fails after ``deadline_s``)."""
    sock.settimeout(deadline_s)
    data = b""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
    raise AssertionError("the server kept the connection open")


@pytest.mark.slow
def test_half_sent_requests_are_closed_and_health_keeps_answering_through_a_flood():
    from sched_server import running_server

    with running_server("--request-timeout", "1s", "--idle-timeout", "1s") as url:
        port = int(url.rsplit(":", 1)[1])
        silent = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(20)]
        half_head = []
        for _ in range(20):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(b"POST /v1/recommend HTTP/1.1\r\nHost: x\r\nContent-")
            half_head.append(s)
        half_body = socket.create_connection(("127.0.0.1", port), timeout=30)
        half_body.sendall(b"POST /v1/recommend HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                          b"Content-Length: 500\r\n\r\n{\"profile\": ")
        idle = socket.create_connection(("127.0.0.1", port), timeout=30)
        idle.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")  # then nothing: keep-alive idles out
        try:
            bodies = [b"{", b"[" * 20_000, b"\xff\xfe", b'{"target": NaN}', b"{}", json.dumps(dict(BASE_REQUEST, target="x")).encode()]

            def malformed(i: int) -> int:
                with httpx.Client(base_url=url, timeout=60) as c:
                    return c.post("/v1/recommend", content=bodies[i % len(bodies)], headers={"content-type": "application/json"}).status_code

            # A flood of malformed requests while 42 slow connections are open; /health answers throughout.
            with ThreadPoolExecutor(max_workers=8) as pool:
                flood = pool.map(malformed, range(120))
                with httpx.Client(base_url=url, timeout=30) as c:
                    for _ in range(5):
                        assert c.get("/health").json()["status"] == "ok"
                    assert c.post("/v1/recommend", json=BASE_REQUEST).status_code == 200
                assert all(400 <= code < 500 for code in flood)
            for s in silent + half_head:
                assert _closed_within(s, 60) == b""
            answer = _closed_within(half_body, 60)
            assert answer.startswith(b"HTTP/1.1 408") and b"request_timeout" in answer
            assert b'"status":"ok"' in _closed_within(idle, 60)
            with httpx.Client(base_url=url, timeout=30) as c:
                assert c.get("/health").json()["status"] == "ok"
        finally:
            for s in silent + half_head + [half_body, idle]:
                s.close()


@pytest.mark.parametrize(
    "path",
    ["a\x00b.jsonl", "x" * 300, "loop1", "loop1/x.jsonl", "dir", "/etc/passwd", "../secret.jsonl", "a/" * 400],
    ids=["nul-byte", "long-component", "symlink-loop", "through-a-loop", "directory", "absolute", "dot-dot", "deep"],
)
def test_profile_paths_the_os_refuses_are_4xx_not_500(tmp_path, path, error_validator):
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    (tmp_path / "dir").mkdir()
    client = TestClient(create_app(ServiceSettings(profile_dir=str(tmp_path))), raise_server_exceptions=False)
    r = client.post("/v1/recommend", json=dict(BASE_REQUEST, profile={"path": path}))
    assert 400 <= r.status_code < 500, r.text
    error_validator.validate(r.json())
    assert r.json()["error"]["path"] == "/profile/path" and "\x00" not in r.text


def test_a_request_that_finds_no_free_worker_within_the_request_timeout_gets_503(monkeypatch, error_validator):
    # A real uvicorn server (in this process, so the solve can be held on an event): one
    # worker, held by a solve that waits on `leave`; a second request must be refused with
    # 503 after --request-timeout, not queued until the first ends.
    import uvicorn
    from _waiting import wait_for
    from sched_server import free_port

    import cotune.serve._app as app_module

    entered, leave = threading.Event(), threading.Event()

    def held_solve(request: dict, **kwargs: object) -> dict:
        if request.get("target") == 0.5:  # the request that holds the worker
            entered.set()
            leave.wait(timeout=60)
        return {"status": "ok"}

    monkeypatch.setattr(app_module, "recommend_request", held_solve)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(ServiceSettings(max_concurrency=1, request_timeout_s=1.0)),
                                           host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: server.started, what="the server to start")
        with ThreadPoolExecutor(max_workers=1) as pool:
            first = pool.submit(httpx.post, url + "/v1/recommend", json={"target": 0.5}, timeout=120)
            assert entered.wait(timeout=60)
            try:
                second = httpx.post(url + "/v1/recommend", json={"target": 0.9}, timeout=120)
            finally:
                leave.set()
            assert first.result().status_code == 200
        assert second.status_code == 503 and int(second.headers["retry-after"]) >= 1
        error_validator.validate(second.json())
        assert second.json()["error"]["code"] == "overloaded" and "--concurrency" in second.json()["error"]["message"]
        # The worker is free again: the next request is answered.
        assert httpx.post(url + "/v1/recommend", json={"target": 0.9}, timeout=120).status_code == 200
    finally:
        leave.set()
        server.should_exit = True
        thread.join(timeout=60)
