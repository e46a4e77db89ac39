"""Running the app under uvicorn with the timeouts a public service needs.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but waits for the
head of a request without end, so a client that opens connections and sends half a
request line keeps each one open forever (slowloris). :func:`timed_protocol` adds a
deadline: the head of each request must arrive within ``request_timeout_s`` of its
first byte (or of the connection opening), else the connection is closed. The body has
the same deadline, enforced by the app while it reads (answer 408).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any, Callable

__all__ = ["timed_protocol", "is_loopback", "listen", "run_server"]


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the service on this machine only."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:  # a host name: it may resolve to anything
        return False


def timed_protocol(base: type[asyncio.Protocol], *, request_timeout_s: float) -> type[asyncio.Protocol]:
    """``base`` (a uvicorn HTTP protocol) that closes connections whose request head is late."""

    class _TimedProtocol(base):  # type: ignore[misc, valid-type]
        _head_timer: asyncio.TimerHandle | None = None

        def _waiting_for_head(self) -> bool:
            cycle = getattr(self, "cycle", None)
            return cycle is None or bool(getattr(cycle, "response_complete", True))

        def _arm(self) -> None:
            if self._head_timer is None:
                self._head_timer = asyncio.get_running_loop().call_later(request_timeout_s, self._head_timeout)

        def _disarm(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None

        def _head_timeout(self) -> None:
            self._head_timer = None
            transport = getattr(self, "transport", None)
            if self._waiting_for_head() and transport is not None and not transport.is_closing():
                transport.close()

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            # The deadline runs from the first byte of a head, not from the last byte
            # received: a byte every few seconds must not keep a connection alive.
            if self._waiting_for_head():
                self._arm()
            else:
                self._disarm()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def on_response_complete(self) -> None:
            # Between requests uvicorn's keep-alive timeout applies; the head deadline
            # starts again with the next request's first byte.
            self._disarm()
            super().on_response_complete()

    _TimedProtocol.__name__ = f"Timed{base.__name__}"
    return _TimedProtocol


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port``; :class:`~cotune.errors.InputError` if it cannot be had.

    Binding here rather than inside uvicorn turns "address in use" or "cannot assign
    requested address" into a one-line error and exit code 2 instead of uvicorn's exit 1.
    """
    from cotune._checks import excerpt
    from cotune.errors import InputError

    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise InputError(f"--port {excerpt(port)}: a TCP port is 0 to 65535 (0: any free port): give e.g. 8000")
    try:
        family, kind, proto, _, addr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    except (socket.gaierror, UnicodeError, ValueError) as exc:
        raise InputError(f"--host {excerpt(host)}: cannot resolve it ({exc}): give an address such as 127.0.0.1") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(addr)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise InputError(
            f"cannot listen on {excerpt(host)} port {port} ({exc.strerror or exc}): pick a free --port, "
            "or a --host address of this machine"
        ) from None
    sock.set_inheritable(True)
    return sock


def run_server(
    app: Any, *, host: str, port: int, log_level: str = "info", on_listen: Callable[[str], None] | None = None
) -> None:
    """Serve ``app`` (from :func:`cotune.serve.create_app`) with its settings' timeouts.

    ``on_listen(url)`` is called once the socket listens (the CLI prints the address).
    """
    import uvicorn
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    sock = listen(host, port)
    if on_listen is not None:
        bound_host, bound_port = sock.getsockname()[:2]
        shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
        on_listen(f"http://{shown}:{bound_port}")
    cfg = app.state.settings
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=timed_protocol(AutoHTTPProtocol, request_timeout_s=cfg.request_timeout_s),
        timeout_keep_alive=cfg.idle_timeout_s,  # type: ignore[arg-type]  # used as call_later's delay
        limit_concurrency=cfg.max_connections,
        server_header=False,
    )
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
