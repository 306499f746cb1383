"""Run by tests/client/test_distribution.py with the Python of a virtualenv that has only the
memoryadmin-client distribution installed: drives a live server through HttpMemoryStore and the
MCP server, and prints what it saw as one JSON object. Not a test module itself.

    MEMORYADMIN_TOKEN=... python installed_client_probe.py BASE_URL SUBJECT
"""

from __future__ import annotations

import json
import os
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

import memoryadmin_client
from memoryadmin_client import HttpMemoryStore, MemoryCategory, MemoryFact


async def drive_store(base_url: str, token: str, subject: str) -> dict:
    async with HttpMemoryStore(base_url, token, session_id="sess-dist") as store:
        await store.upsert_facts(
            subject,
            [
                MemoryFact(key="seat_preference", value="Prefers aisle seats"),
                MemoryFact(
                    key="overnight_flights",
                    value="Avoids overnight flights",
                    category=MemoryCategory.CONSTRAINT,
                ),
            ],
        )
        tier_one = [fact.key for fact in await store.tier_one(subject)]
        deleted = await store.delete_fact(subject, "overnight_flights")
        deleted_again = await store.delete_fact(subject, "overnight_flights")
        left = [fact.key for fact in await store.get_facts(subject)]
    return {"tier_one": tier_one, "deleted": [deleted, deleted_again], "left": left}


async def drive_mcp(base_url: str, token: str, subject: str) -> dict:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memoryadmin_client.mcp", "--base-url", base_url, "--subject", subject],
        env={"MEMORYADMIN_TOKEN": token},
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        listed = await session.list_tools()
        saved = await session.call_tool("save_memory", {"key": "meal", "value": "Vegetarian"})
        recalled = await session.call_tool("recall_memories", {"topic": "meal"})
    return {
        "tools": sorted(tool.name for tool in listed.tools),
        "save": [block.text for block in saved.content],
        "recall": [block.text for block in recalled.content],
    }


async def main(base_url: str, subject: str) -> None:
    token = os.environ["MEMORYADMIN_TOKEN"]
    with anyio.fail_after(60):
        seen = {
            "package": memoryadmin_client.__file__,
            "skill": memoryadmin_client.skill_text()[:3],
            "store": await drive_store(base_url, token, subject),
            "mcp": await drive_mcp(base_url, token, subject),
        }
    print(json.dumps(seen))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
