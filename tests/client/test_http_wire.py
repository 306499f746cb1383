"""HttpMemoryStore against small real socket servers: what goes on the wire, how each error
answer is typed, and which calls are retried after a dropped connection."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest

from memoryadmin_client.errors import (
    AuthError,
    Blocked,
    Conflict,
    Invalid,
    MemoryApiError,
    NotFound,
    Throttled,
    Unavailable,
)
from memoryadmin_client.http import HttpMemoryStore
from memoryadmin_client.types import MemoryCategory, MemoryFact

from .servers import Canned, CannedHttpServer, DroppingProxy, free_port, header_of

FACT = {
    "key": "seat_preference",
    "value": "Prefers aisle seats",
    "category": "preference",
    "updated_at": "2026-05-01T10:00:00Z",
    "source_session_id": "0123456789ab",
}


def call(store_factory, method: str, *args, **kwargs):
    """Open a store, make one call, close it; each test gets its own event loop."""

    async def go():
        async with store_factory() as store:
            return await getattr(store, method)(*args, **kwargs)

    return asyncio.run(go())


def store_for(url: str, **kwargs):
    kwargs.setdefault("backoff", 0.01)
    return lambda: HttpMemoryStore(url, "mat_secret", **kwargs)


# --- the request itself -----------------------------------------------------------------------


def test_requests_carry_the_token_and_quote_path_segments():
    with CannedHttpServer([Canned(200, FACT, {"ETag": '"4"'})]) as server:
        # (a slash or a space is refused before any request since issue 20; ? and # are quoted)
        got = call(store_for(server.url), "read_fact", "traveller?1#x", "seat%pref")
    [seen] = server.seen
    assert seen.method == "GET"
    assert seen.path == "/api/v1/subjects/traveller%3F1%23x/facts/seat%25pref"
    assert seen.headers["authorization"] == "Bearer mat_secret"
    assert "idempotency-key" not in seen.headers  # reads need none
    assert got.version == 4
    assert got.fact == MemoryFact(**FACT)


def test_base_url_with_a_path_prefix_is_kept():
    with CannedHttpServer([Canned(200, {"facts": []})]) as server:
        call(store_for(server.url + "/memory/"), "get_facts", "t-1")
    assert server.seen[0].path == "/memory/api/v1/subjects/t-1/facts"


def test_upsert_sends_the_facts_the_session_and_an_idempotency_key():
    with CannedHttpServer([Canned(200, {"facts": [FACT]})]) as server:
        call(
            store_for(server.url, session_id="sess-9"),
            "upsert_facts",
            "t-1",
            [
                MemoryFact(
                    key="overnight",
                    value="Avoids overnight flights",
                    category=MemoryCategory.CONSTRAINT,
                )
            ],
        )
    [seen] = server.seen
    assert seen.method == "PUT" and seen.path == "/api/v1/subjects/t-1/facts"
    assert uuid.UUID(seen.headers["idempotency-key"])
    assert json.loads(seen.body) == {
        "facts": [
            {"key": "overnight", "value": "Avoids overnight flights", "category": "constraint"}
        ],
        "session_id": "sess-9",
    }


def test_upserting_nothing_sends_nothing():
    with CannedHttpServer([Canned(500)]) as server:
        assert call(store_for(server.url), "upsert_facts", "t-1", []) is None
    assert server.seen == []


def test_put_fact_sends_if_match_and_every_write_gets_its_own_key():
    with CannedHttpServer([Canned(200, FACT, {"ETag": '"3"'})]) as server:

        async def go():
            async with store_for(server.url)() as store:
                first = await store.put_fact(
                    "t-1", "seat_preference", "Prefers aisle seats", expected_version=2
                )
                await store.put_fact("t-1", "seat_preference", "Prefers aisle seats")
                return first

        first = asyncio.run(go())
    assert first.version == 3
    one, two = server.seen
    assert one.headers["if-match"] == '"2"'
    assert "if-match" not in two.headers
    assert one.headers["idempotency-key"] != two.headers["idempotency-key"]


# --- typed errors ---------------------------------------------------------------------------


def error_body(code: str, message: str, fields: dict | None = None) -> dict:
    return {"error": {"code": code, "message": message, "fields": fields or {}}}


@pytest.mark.parametrize(
    ("status", "body", "expected", "code"),
    [
        (401, error_body("unauthorized", "Bad token."), AuthError, "unauthorized"),
        (403, error_body("forbidden", "Missing scope memory:write."), AuthError, "forbidden"),
        (404, error_body("not_found", "No such fact."), NotFound, "not_found"),
        (412, error_body("precondition_failed", "Stale."), Conflict, "precondition_failed"),
        (409, error_body("invalid_state", "Not pending."), Conflict, "invalid_state"),
        (422, error_body("blocked_by_filter", "Looks like a card."), Blocked, "blocked_by_filter"),
        (422, error_body("idempotency_key_reused", "Reused."), Invalid, "idempotency_key_reused"),
        (400, error_body("invalid", "Bad.", {"value": "Too long."}), Invalid, "invalid"),
        (503, error_body("unavailable", "Down for maintenance."), Unavailable, "unavailable"),
        (418, error_body("teapot", "I am a teapot."), MemoryApiError, "teapot"),
    ],
)
def test_each_error_status_raises_its_type(status, body, expected, code):
    with CannedHttpServer([Canned(status, body)]) as server, pytest.raises(expected) as caught:
        call(store_for(server.url), "get_facts", "t-1")
    error = caught.value
    assert type(error) is expected
    assert (error.status, error.code, error.message) == (
        status,
        code,
        body["error"]["message"],
    )
    assert error.fields == body["error"]["fields"]
    assert len(server.seen) == 1  # an answer, even an error, is never retried


def test_throttled_carries_retry_after():
    with (
        CannedHttpServer(
            [Canned(429, error_body("throttled", "Slow down."), {"Retry-After": "7"})]
        ) as server,
        pytest.raises(Throttled) as caught,
    ):
        call(store_for(server.url), "search_facts", "t-1", "seat")
    assert caught.value.retry_after == 7.0
    assert len(server.seen) == 1


def test_a_proxy_error_page_becomes_unavailable_without_its_html():
    page = "<html><body><h1>502 Bad Gateway</h1></body></html>"
    with CannedHttpServer([Canned(502, page)]) as server, pytest.raises(Unavailable) as caught:
        call(store_for(server.url), "tier_one", "t-1")
    assert caught.value.status == 502
    assert "<html>" not in caught.value.message


def test_a_response_of_the_wrong_shape_is_reported_not_crashed_on():
    with (
        CannedHttpServer([Canned(200, {"unexpected": True})]) as server,
        pytest.raises(MemoryApiError) as caught,
    ):
        call(store_for(server.url), "get_facts", "t-1")
    assert caught.value.code == "bad_response"


def test_delete_reports_whether_something_was_deleted():
    with CannedHttpServer([Canned(204), Canned(404, error_body("not_found", "No."))]) as server:
        assert call(store_for(server.url), "delete_fact", "t-1", "meal") is True
        assert call(store_for(server.url), "delete_fact", "t-1", "meal") is False
    assert [seen.method for seen in server.seen] == ["DELETE", "DELETE"]


def test_get_fact_is_none_when_missing():
    with CannedHttpServer([Canned(404, error_body("not_found", "No such fact."))]) as server:
        assert call(store_for(server.url), "get_fact", "t-1", "meal") is None


# --- retries --------------------------------------------------------------------------------


def test_closed_port_is_unavailable_after_every_attempt():
    port = free_port()
    with pytest.raises(Unavailable) as caught:
        call(store_for(f"http://127.0.0.1:{port}", retries=3), "get_facts", "t-1")
    assert caught.value.attempts == 4
    assert caught.value.code == "unavailable"


def test_reads_are_retried_until_the_attempts_run_out():
    with DroppingProxy(drop=None) as proxy, pytest.raises(Unavailable) as caught:
        call(store_for(proxy.url, retries=2), "get_facts", "t-1")
    assert proxy.connections == 3
    assert caught.value.attempts == 3


def test_a_post_without_idempotency_key_is_sent_once():
    async def go(url):
        async with store_for(url, retries=2)() as store:
            await store.request("POST", "/api/v1/subjects/t-1/clear", idempotency_key=None)

    with DroppingProxy(drop=None) as proxy, pytest.raises(Unavailable) as caught:
        asyncio.run(go(proxy.url))
    assert proxy.connections == 1
    assert caught.value.attempts == 1


def test_a_dropped_write_is_resent_with_the_same_idempotency_key():
    with (
        CannedHttpServer([Canned(200, {"facts": [FACT]})]) as server,
        DroppingProxy(("127.0.0.1", int(server.url.rsplit(":", 1)[1])), drop=1) as proxy,
    ):
        call(store_for(proxy.url), "upsert_facts", "t-1", [MemoryFact(**FACT)])
    assert proxy.connections == 2
    dropped_key = header_of(proxy.requests[0], "Idempotency-Key")
    assert dropped_key and server.seen[0].headers["idempotency-key"] == dropped_key
    assert len(server.seen) == 1


def test_retries_zero_means_one_attempt():
    with DroppingProxy(drop=None) as proxy, pytest.raises(Unavailable):
        call(store_for(proxy.url, retries=0), "purge_generation", "t-1")
    assert proxy.connections == 1


def test_one_store_can_be_used_from_successive_event_loops():
    """Hosts that wrap each call in asyncio.run (or async_to_sync) must not trip over
    connections pooled by a loop that has gone."""
    with CannedHttpServer([Canned(200, {"purge_generation": 2})]) as server:
        store = HttpMemoryStore(server.url, "mat_secret")
        assert asyncio.run(store.purge_generation("t-1")) == 2
        assert asyncio.run(store.purge_generation("t-1")) == 2
        asyncio.run(store.aclose())
    assert len(server.seen) == 2


def test_a_token_is_required():
    with pytest.raises(ValueError):
        HttpMemoryStore("http://127.0.0.1:1", "")


def test_calls_from_one_loop_share_one_kept_alive_connection():
    """An agent host pays the TCP connect once, not on every call, when the server keeps the
    connection open (HTTP/1.1 keep-alive)."""

    async def calls(store: HttpMemoryStore) -> list[int]:
        try:
            return [await store.purge_generation(f"t-{n}") for n in range(5)]
        finally:
            await store.aclose()

    with CannedHttpServer([Canned(200, {"purge_generation": 4})]) as server:
        address = server.url.removeprefix("http://").split(":")
        with DroppingProxy((address[0], int(address[1])), drop=0) as proxy:
            assert asyncio.run(calls(HttpMemoryStore(proxy.url, "mat_secret"))) == [4] * 5
    assert len(server.seen) == 5
    assert proxy.connections == 1
