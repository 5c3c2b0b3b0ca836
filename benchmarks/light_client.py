"""A light Streamlit client: one WebSocket session that opens a share link and waits for its first chart — what a
browser's first page costs the server, without a browser (issue 32's load test, tests/test_cluster.py).

It speaks Streamlit's own protocol (protobuf messages on ``/_stcore/stream``): it connects as the frontend does
(subprotocol ``streamlit``, the page's origin), sends one ``rerun_script`` BackMsg carrying the link's query string
and page, and reads ForwardMsgs until a Vega-Lite chart element arrives. It keeps every chart's spec (its data holds
the numbers drawn) and every text element (status lines, notices), so a test can compare the numbers two servers
drew for one link and read what the page said while it waited. Loopback only.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg


@dataclass
class Session:
    """What one light session saw: seconds to the first chart (None: none came), the charts in order (their spec
    and data, :func:`_chart`), the texts of markdown/caption/alert elements, and the error that ended it, if any."""

    first_chart_s: float | None = None
    charts: list[dict] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    error: str | None = None


def _websocket_url(url: str) -> str:
    parts = urlsplit(url)
    return f"ws://{parts.netloc}/_stcore/stream"


def _rows(arrow_bytes: bytes) -> list[dict]:
    import pyarrow

    return pyarrow.ipc.open_stream(arrow_bytes).read_all().to_pylist() if arrow_bytes else []


def _chart(chart) -> dict:
    """A chart element as ``{"spec": the Vega-Lite spec, "data": {dataset name: rows}}`` (Streamlit sends the data
    beside the spec, as Arrow)."""
    data = {item.name: _rows(item.data.data) for item in chart.datasets}
    if chart.data.data:
        data[""] = _rows(chart.data.data)
    return {"spec": json.loads(chart.spec), "data": data}


def _element_text(element) -> str | None:
    kind = element.WhichOneof("type")
    if kind == "markdown":
        return element.markdown.body
    if kind == "alert":
        return element.alert.body
    return None


async def open_link(url: str, query: str = "", page: str = "", *, charts: int = 1, timeout_s: float = 60.0,
                    cookie: str | None = None) -> Session:
    """Open ``url``'s page ``page`` (a share link's path, e.g. ``inspect``; "" = the default page) with ``query``
    (the link's query string, without ``?``) and wait for ``charts`` charts or the end of the script run."""
    import websockets

    session, started = Session(), time.perf_counter()
    parts = urlsplit(url)
    headers = {"Cookie": cookie} if cookie else None
    try:
        async with websockets.connect(_websocket_url(url), subprotocols=["streamlit"], max_size=None,
                                      origin=f"{parts.scheme}://{parts.netloc}", additional_headers=headers,
                                      open_timeout=timeout_s) as socket:
            message = BackMsg()
            message.rerun_script.query_string = query
            message.rerun_script.page_name = page
            await socket.send(message.SerializeToString())
            deadline = started + timeout_s
            while True:
                data = await asyncio.wait_for(socket.recv(), max(0.01, deadline - time.perf_counter()))
                forward = ForwardMsg()
                forward.ParseFromString(data)
                kind = forward.WhichOneof("type")
                if kind == "script_finished":
                    if len(session.charts) < charts:
                        session.error = f"the page finished with {len(session.charts)} of {charts} charts"
                    break
                if kind != "delta" or forward.delta.WhichOneof("type") != "new_element":
                    continue
                element = forward.delta.new_element
                if element.WhichOneof("type") == "vega_lite_chart":
                    if session.first_chart_s is None:
                        session.first_chart_s = time.perf_counter() - started
                    session.charts.append(_chart(element.vega_lite_chart))
                    if len(session.charts) >= charts:
                        break
                elif (text := _element_text(element)) is not None:
                    session.texts.append(text)
    except TimeoutError:
        session.error = f"no chart within {timeout_s:g} s"
    except Exception as err:  # noqa: BLE001 — a load test counts every failure as an error, with its cause
        session.error = f"{type(err).__name__}: {err}"
    return session


def open_links(url: str, queries: list[str], page: str = "", **kwargs) -> list[Session]:
    """Open each query at once (one session each) and wait for all."""

    async def all_of() -> list[Session]:
        return list(await asyncio.gather(*(open_link(url, q, page, **kwargs) for q in queries)))

    return asyncio.run(all_of())


def chart_numbers(chart: dict) -> list[list[dict]]:
    """The data a chart draws (every dataset's rows, by dataset name), without the spec's presentation."""
    return [chart["data"][name] for name in sorted(chart["data"])]
