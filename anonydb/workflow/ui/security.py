"""The workbench's door: a random token in the URL, as Jupyter does, then a cookie; and no request
from another site.

* Every request (pages, assets, the websocket) needs the token: ``?token=...`` once, which sets an
  HttpOnly, SameSite=Strict cookie holding it, or that cookie. Anything else is 403.
* A request that can change state (any method but GET, HEAD, OPTIONS) and every websocket must
  come from the workbench's own origin: its ``Origin`` (or, without one, its ``Referer``) names the
  host it was sent to. With the SameSite=Strict cookie this is the OWASP double defence against
  cross-site request forgery.
* No response carries ``Access-Control-Allow-Origin: *``: a CORS header naming any other origin is
  taken out.

The token is compared in constant time and never logged (the server's access log is off)."""

from __future__ import annotations

import hmac
import urllib.parse
from http.cookies import SimpleCookie
from typing import Any

#: the cookie that holds the token once the URL's token was seen
COOKIE = "anonydb_ui"
SAFE = {"GET", "HEAD", "OPTIONS"}


class Guard:
    """Pure ASGI middleware (it sees HTTP and websocket scopes, the socket.io mount included)."""

    def __init__(self, app: Any, token: str):
        self.app, self.token = app, token

    def _ok(self, value: str | None) -> bool:
        return bool(value) and hmac.compare_digest(str(value).encode(), self.token.encode())

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        query = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1"))
        cookie = SimpleCookie(headers.get("cookie", ""))
        by_url = self._ok((query.get("token") or [None])[0])
        by_cookie = COOKIE in cookie and self._ok(cookie[COOKIE].value)
        if not (by_url or by_cookie):
            return await self._refuse(scope, send, "open the workbench with the URL (and its token) that "
                                                   "`anonydb ui` printed")
        if (scope["type"] == "websocket" or scope.get("method", "GET") not in SAFE) and not self._same_origin(headers):
            return await self._refuse(scope, send, "a request from another site was refused (cross-site request "
                                                   "forgery protection)")

        async def sending(message: dict) -> None:
            if message["type"] == "http.response.start":
                hs = [(k, v) for k, v in message.get("headers", [])
                      if not (k.lower() == b"access-control-allow-origin" and v != self._origin(headers).encode())]
                if by_url:
                    hs.append((b"set-cookie", f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/".encode()))
                message = {**message, "headers": hs}
            await send(message)

        return await self.app(scope, receive, sending)

    @staticmethod
    def _origin(headers: dict[str, str]) -> str:
        return f"http://{headers.get('host', '')}"

    def _same_origin(self, headers: dict[str, str]) -> bool:
        own = self._origin(headers)
        origin = headers.get("origin")
        if origin is not None:
            return origin == own
        referer = headers.get("referer")
        if referer is not None:
            return referer == own or referer.startswith(own + "/")
        return headers.get("sec-fetch-site", "same-origin") in ("same-origin", "none")

    @staticmethod
    async def _refuse(scope: dict, send: Any, why: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        body = f"anonydb ui: {why}\n".encode()
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


__all__ = ["COOKIE", "Guard"]
