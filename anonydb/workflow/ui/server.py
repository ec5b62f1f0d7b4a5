"""``anonydb ui``: the browser workbench, served on this machine.

The server is NiceGUI's (FastAPI and uvicorn; Vue, Quasar and ECharts shipped in its wheel, so the
page needs no internet and no build step): ``pip install 'anonydb[ui]'``. It binds 127.0.0.1 by
default and prints a URL with a fresh random token; every request needs it
(:mod:`anonydb.workflow.ui.security`). docs/ui.md says why this stack."""

from __future__ import annotations

import argparse
import secrets
import socket
import sys
from typing import Any

from ...errors import InputError


def free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host if host != "0.0.0.0" else "127.0.0.1", 0))
        return int(s.getsockname()[1])


def prepare(engine: Any, label: str, token: str, host: str, port: int) -> Any:
    """Register the page, the report route and the token's guard on NiceGUI's app; returns the
    :class:`~anonydb.workflow.ui.workbench.Workbench` (tests run the app in-process the same way)."""
    try:
        from nicegui import app, core, ui
    except ImportError as e:
        raise InputError("the workbench needs NiceGUI: pip install 'anonydb[ui]'") from e
    from fastapi.responses import HTMLResponse, PlainTextResponse

    from .pages import build
    from .security import Guard
    from .workbench import Workbench

    wb = Workbench(engine, label)
    own = [f"http://{h}:{port}" for h in {host, "127.0.0.1", "localhost"}]
    core.sio.eio.cors_allowed_origins = own  # NiceGUI's default is every origin

    @ui.page("/")
    def index() -> None:
        build(wb)

    @app.get("/report/{rid}")
    def report(rid: str) -> Any:
        page = wb.reports.get(rid)
        return HTMLResponse(page) if page is not None else PlainTextResponse("no such report", status_code=404)

    app.add_middleware(Guard, token=token)
    app.on_shutdown(wb.drop_explored)
    return wb


def run(args: argparse.Namespace, engine: Any) -> int:
    """Serve until interrupted; print the URL (with its token) first."""
    host = args.host
    port = args.port or free_port(host)
    token = secrets.token_urlsafe(32)
    from ...engines import safe_url

    label = safe_url(str(args.db or args.engine or ""))  # shown in the page: never a password
    prepare(engine, label, token, host, port)
    from nicegui import ui

    shown = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    if host not in ("127.0.0.1", "localhost", "::1"):
        print(f"anonydb: warning: --host {host} lets other machines reach the workbench and its data; anyone with "
              f"the URL's token can read and release tables", file=sys.stderr)
    print(f"anonydb workbench: http://{shown}:{port}/?token={token}", flush=True)
    try:
        ui.run(host=host, port=port, reload=False, show=False, title="anonydb workbench", dark=False,
               show_welcome_message=False, uvicorn_logging_level="warning", access_log=False,
               reconnect_timeout=30.0)
    finally:
        engine.close()
    return 0


__all__ = ["free_port", "prepare", "run"]
