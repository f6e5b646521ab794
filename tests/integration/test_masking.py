"""Data masking against the real cluster: a viewer sees masked values on every surface that shows records
(message pages and API, search and its downloads, raw downloads, the live tail, the segment pages) and
cannot find the hidden text by searching for it; an admin sees everything whole."""

from __future__ import annotations

import asyncio
import csv
import io
import json
from typing import Any

import fastavro
import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from broker.local import launcher
from broker.messages.masking import DEFAULT_REPLACEMENT, parse_rules
from console.access import set_role
from console.asgi import application
from tests.conftest import console_user, logged_in, websocket_headers
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.django_db(transaction=True),
    pytest.mark.zookeeper("masking does not depend on the cluster's mode: run once"),
]

EMAIL = "ann.secret@example.com"
CARD = "4111-2222-3333-4444"
VALUE = {"user": {"email": EMAIL, "name": "Ann"}, "note": f"paid with {CARD}", "n": 1}
LABELS = ["$.user.email", "~ cards", "header auth ~ cards"]


@pytest.fixture
def topic(kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings: Any) -> str:
    """A one-partition topic on broker 0 holding one record with an e-mail address, a card number in its
    value and a card number in a header, and rules that mask both for roles below admin."""
    name = create_topic(unique("masked"), partitions=1, replication=1, assignments={0: [0]})
    settings.KAZAMI_MASKING = parse_rules(
        json.dumps(
            [
                {"name": "emails", "topics": "masked-*", "paths": ["$.user.email"]},
                {"name": "cards", "topics": "masked-*", "parts": ["value", "headers"], "regex": r"\d{4}(-\d{4}){3}"},
                {"name": "elsewhere", "topics": "other-*", "paths": ["$"]},
            ]
        )
    )
    produce(name, [(b"user-1", json.dumps(VALUE).encode())], partition=0, headers=[("auth", f"card {CARD}".encode())])
    return name


def hidden(text: str | bytes) -> bool:
    """Whether none of the secrets is in ``text``."""
    data = text.decode() if isinstance(text, bytes) else text
    return EMAIL not in data and CARD not in data and "ann.secret" not in data


def get(client: Client, path: str, status: int = 200, **params: Any) -> Any:
    response = client.get(path, params)
    assert response.status_code == status, response.content[:500]
    return response


def test_a_viewer_sees_masked_values_on_the_message_pages_and_api(topic: str) -> None:
    viewer = logged_in("viewer")
    api = f"/api/clusters/local/topics/{topic}/partitions/0/messages"
    [message] = get(viewer, api).json()["messages"]
    assert hidden(json.dumps(message))
    assert message["masked"] == LABELS
    assert json.loads(message["value"])["user"] == {"email": DEFAULT_REPLACEMENT, "name": "Ann"}
    assert message["headers"] == [{"name": "auth", "value": f"card {DEFAULT_REPLACEMENT}", "value_encoding": "utf-8"}]
    assert message["key"] == "user-1"  # no rule covers keys
    one = get(viewer, f"{api}/0").json()
    assert hidden(json.dumps(one))
    assert one["masked"] == LABELS

    browse = get(viewer, f"/clusters/local/topics/{topic}/partitions/0/").content.decode()
    assert hidden(browse)
    assert 'class="masked-note' in browse
    assert "$.user.email" in browse
    detail = get(viewer, f"/clusters/local/topics/{topic}/partitions/0/offsets/0/").content.decode()
    assert hidden(detail)
    assert 'id="message-masked"' in detail
    assert "~ cards" in detail
    # The raw bytes of the masked value are refused, saying why; the key, which no rule masks, is given.
    for path in (f"/clusters/local/topics/{topic}/partitions/0/offsets/0/", f"{api}/0"):
        refused = get(viewer, path, 403, download="value")
        assert hidden(refused.content)
        assert b"masking" in refused.content
        assert get(viewer, path, download="key").content == b"user-1"


def test_a_viewer_cannot_find_the_hidden_text_by_searching(topic: str) -> None:
    viewer = logged_in("viewer")
    search = f"/api/clusters/local/topics/{topic}/search/"
    for query in (
        f'value contains "{EMAIL}"',
        'value contains "ann.secret"',
        f'value.user.email == "{EMAIL}"',
        'value.note contains "4111"',
        'headers.auth contains "4111"',
    ):
        found = get(viewer, search, q=query).json()
        assert (found["scanned"], found["matched"], found["messages"]) == (1, 0, []), query
    masked = get(viewer, search, q=f'value.user.email == "{DEFAULT_REPLACEMENT}"').json()
    assert masked["matched"] == 1
    assert hidden(json.dumps(masked))
    assert masked["messages"][0]["masked"] == LABELS

    page = f"/clusters/local/topics/{topic}/search/"
    assert 'id="msg-' not in get(viewer, page, q='value contains "ann.secret"', run="1").content.decode()
    shown = get(viewer, page, q="", run="1").content.decode()
    assert 'id="msg-0-0"' in shown
    assert hidden(shown)
    downloaded = json.loads(get(viewer, page, q="", format="json").content)
    assert hidden(json.dumps(downloaded))
    assert downloaded["messages"][0]["masked"] == LABELS
    rows = list(csv.reader(io.StringIO(get(viewer, page, q="", format="csv").content.decode())))
    assert rows[0][-1] == "masked"
    assert rows[1][-1] == "; ".join(LABELS)
    assert hidden(json.dumps(rows))
    assert get(viewer, page, q='value contains "4111"', format="json").json()["matched"] == 0


def test_the_search_websocket_of_a_viewer_finds_nothing_hidden(topic: str) -> None:
    headers = websocket_headers(logged_in("viewer"))

    async def run(query: str) -> str:
        ws = WebsocketCommunicator(application, f"/ws/clusters/local/topics/{topic}/search/", headers=headers)
        assert (await ws.connect())[0]
        await ws.send_to(text_data=json.dumps({"action": "start", "q": query}))
        received = []
        while True:
            text = await ws.receive_from(timeout=20)
            received.append(text)
            if 'id="search-state"' in text and "searching" not in text:
                break
        await ws.disconnect()
        return "".join(received)

    probed = async_to_sync(run)('value contains "ann.secret"')
    assert 'class="message-row' not in probed
    everything = async_to_sync(run)("")
    assert everything.count('class="message-row') == 1
    assert hidden(everything)
    assert 'class="masked-note' in everything


def test_the_live_tail_masks_for_a_viewer_and_not_for_an_admin(topic: str) -> None:
    viewer, admin = websocket_headers(logged_in("viewer")), websocket_headers(logged_in("admin"))
    fresh = {"user": {"email": "fresh." + EMAIL}, "note": "tail"}

    async def scenario() -> tuple[str, str]:
        path = f"/ws/clusters/local/topics/{topic}/tail/"
        sockets = [WebsocketCommunicator(application, path, headers=h) for h in (viewer, admin)]
        for ws in sockets:
            assert (await ws.connect())[0]
            await ws.receive_from(timeout=15)
        await asyncio.sleep(1.0)  # the tails' consumers have reached the end
        await asyncio.get_running_loop().run_in_executor(None, produce, topic, [(b"k", json.dumps(fresh).encode())])
        pushed = []
        for ws in sockets:
            text = ""
            while "tail-rows" not in text:
                text = await ws.receive_from(timeout=15)
            pushed.append(text)
            await ws.disconnect()
        return pushed[0], pushed[1]

    seen_by_viewer, seen_by_admin = async_to_sync(scenario)()
    assert "fresh." not in seen_by_viewer
    assert "ann.secret" not in seen_by_viewer
    assert 'class="masked-note' in seen_by_viewer
    assert "fresh.ann.secret@example.com" in seen_by_admin
    assert 'class="masked-note' not in seen_by_admin


def test_a_tail_closes_when_its_user_is_given_a_role_that_sees_it_masked(topic: str, settings: Any) -> None:
    settings.KAZAMI_WS_RECHECK = 0.3
    user = console_user("admin", "tail-demoted")
    client = Client()
    client.force_login(user)
    headers = websocket_headers(client)

    async def scenario() -> dict[str, Any]:
        ws = WebsocketCommunicator(application, f"/ws/clusters/local/topics/{topic}/tail/", headers=headers)
        assert (await ws.connect())[0]
        await ws.receive_from(timeout=15)
        await database_sync_to_async(set_role)(user, "viewer")
        said: list[str] = []
        while True:
            output: dict[str, Any] = await ws.receive_output(timeout=10)
            if output["type"] == "websocket.close":
                await ws.disconnect()  # as a browser answers the close: the shared reader stops
                return {**output, "said": "".join(said)}
            said.append(output.get("text", ""))

    closed = async_to_sync(scenario)()
    assert closed["code"] == 4409
    assert "Your role changed what you may see of this topic" in closed["said"]


def test_the_segment_pages_mask_records_for_a_viewer(topic: str) -> None:
    viewer, admin = logged_in("viewer"), logged_in("admin")
    replica = f"/api/clusters/local/brokers/0/partitions/{topic}/0/segments/"
    base = get(viewer, replica).json()["segments"][0]["base_offset"]
    position = get(viewer, f"{replica}{base}/batches", position=0, limit=1).json()["batches"][0]["position"]
    records = f"{replica}{base}/batches/{position}/records"
    [record] = get(viewer, records).json()["records"]
    assert hidden(json.dumps(record))
    assert record["masked"] == LABELS
    page = f"/clusters/local/brokers/0/partitions/{topic}/0/segments/{base}/batches/{position}/"
    html = get(viewer, page).content.decode()
    assert hidden(html)
    assert 'class="masked-note' in html
    [whole] = get(admin, records).json()["records"]
    assert EMAIL in whole["value"]
    assert whole["masked"] == []
    assert EMAIL in get(admin, page).content.decode()


def test_an_admin_sees_every_value_whole(topic: str) -> None:
    admin = logged_in("admin")
    api = f"/api/clusters/local/topics/{topic}/partitions/0/messages"
    [message] = get(admin, api).json()["messages"]
    assert json.loads(message["value"]) == VALUE
    assert message["masked"] == []
    assert message["headers"][0]["value"] == f"card {CARD}"
    detail = get(admin, f"/clusters/local/topics/{topic}/partitions/0/offsets/0/").content.decode()
    assert EMAIL in detail
    assert 'id="message-masked"' not in detail
    assert json.loads(get(admin, f"{api}/0", download="value").content) == VALUE
    found = get(admin, f"/api/clusters/local/topics/{topic}/search/", q=f'value.user.email == "{EMAIL}"').json()
    assert found["matched"] == 1
    rows = list(
        csv.reader(io.StringIO(get(admin, f"/clusters/local/topics/{topic}/search/", format="csv").content.decode()))
    )
    assert rows[0][-1] == "value"  # no masked column for a user no rule masks
    assert EMAIL in rows[1][-1]


def test_operators_see_what_a_rule_of_level_operator_hides_from_viewers(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings: Any
) -> None:
    name = create_topic(unique("opmask"), partitions=1, replication=1)
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{"topics": name, "paths": ["$.pin"], "level": "operator"}]))
    produce(name, [(None, b'{"pin": "9876"}')], partition=0)
    api = f"/api/clusters/local/topics/{name}/partitions/0/messages"
    assert get(logged_in("viewer"), api).json()["messages"][0]["value"] == json.dumps(
        {"pin": DEFAULT_REPLACEMENT}, ensure_ascii=False
    )
    assert get(logged_in("operator"), api).json()["messages"][0]["value"] == '{"pin": "9876"}'


def test_the_masking_page_lists_the_rules_for_admins_only(topic: str) -> None:
    admin, viewer = logged_in("admin"), logged_in("viewer")
    rules = get(admin, "/api/clusters/local/masking/").json()["rules"]
    assert [r["name"] for r in rules] == ["emails", "cards", "elsewhere"]
    assert rules[1]["regex"] == r"\d{4}(-\d{4}){3}"
    assert rules[0]["masked_for"] == ["viewer", "operator"]
    html = get(admin, "/clusters/local/masking/").content.decode()
    assert 'id="masking-rules"' in html
    assert "$.user.email" in html
    trial = get(admin, "/api/clusters/local/masking/", topic=topic, partition=0, offset=0).json()["trial"]
    assert [v["masked"] for v in trial["views"]] == [LABELS, LABELS, []]
    page = get(admin, "/clusters/local/masking/", topic=topic, partition=0, offset=0).content.decode()
    assert 'id="masking-trial"' in page
    assert 'href="/clusters/local/masking/"' in get(admin, "/clusters/local/topics/").content.decode()
    assert get(viewer, "/api/clusters/local/masking/", 403).json()["error"] == "forbidden"
    assert get(viewer, "/clusters/local/masking/", 403).status_code == 403
    assert 'href="/clusters/local/masking/"' not in get(viewer, "/clusters/local/topics/").content.decode()


def test_avro_values_are_masked_with_the_topics_schema(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None, settings: Any
) -> None:
    name = create_topic(unique("avromask"), partitions=1, replication=1)
    settings.KAZAMI_MASKING = parse_rules(json.dumps([{"topics": name, "paths": ["$.user"]}]))
    fields = [{"name": "user", "type": "string"}, {"name": "ms", "type": "long"}]
    schema = {"type": "record", "name": "View", "fields": fields}
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), {"user": "secret-user-42", "ms": 1234})
    produce(name, [(b"k", b"\x00\x00\x00\x00\x07" + out.getvalue())], partition=0)
    admin, viewer = logged_in("admin"), logged_in("viewer")
    saved = admin.post(f"/clusters/local/topics/{name}/schema/", {"part": "value", "schema": json.dumps(schema)})
    assert saved.status_code == 302
    for value_as in ("auto", "avro", "hex", "text"):
        html = get(viewer, f"/clusters/local/topics/{name}/partitions/0/offsets/0/", value_as=value_as)
        assert "secret-user-42" not in html.content.decode(), value_as
    [message] = get(viewer, f"/api/clusters/local/topics/{name}/partitions/0/messages").json()["messages"]
    assert json.loads(message["value"]) == {"user": DEFAULT_REPLACEMENT, "ms": 1234}
    assert message["masked"] == ["$.user"]
    assert get(viewer, f"/api/clusters/local/topics/{name}/search/", q='value contains "secret"').json()["matched"] == 0
    whole = get(admin, f"/clusters/local/topics/{name}/partitions/0/offsets/0/", value_as="avro").content.decode()
    assert "secret-user-42" in whole
