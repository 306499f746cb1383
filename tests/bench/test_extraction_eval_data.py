"""The extraction benchmark's labelled data and scorer: checked here so a broken label or a
scoring bug shows up in `make test`, long before anyone spends tokens on a benchmark run."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
SCRIPT = REPO_ROOT / "bench" / "extraction_eval.py"
DATA = REPO_ROOT / "bench" / "data" / "extraction_eval.jsonl"
SNAKE_CASE = re.compile(r"^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$")
CATEGORIES = {"preference", "constraint", "context"}


def _load_bench() -> ModuleType:
    """bench/ is not a package; load the script as a module (registered first, for dataclasses)."""
    spec = importlib.util.spec_from_file_location("extraction_eval", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


bench = _load_bench()


def _raw_lines() -> list[dict]:
    lines = [line for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [json.loads(line) for line in lines]


ROWS = _raw_lines()


# --- The dataset ---------------------------------------------------------------------------------


def test_dataset_is_big_enough_and_bilingual():
    langs = Counter(row["lang"] for row in ROWS)
    assert len(ROWS) >= 40
    assert set(langs) == {"en", "zh-Hant"}
    assert langs["en"] >= 15
    assert langs["zh-Hant"] >= 15


def test_ids_are_unique():
    ids = [row["id"] for row in ROWS]
    assert len(ids) == len(set(ids))
    assert all(isinstance(i, str) and i for i in ids)


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_every_line_follows_the_schema(row):
    assert set(row) == {"id", "lang", "held", "messages", "expected", "notes"}
    assert row["lang"] in {"en", "zh-Hant"}
    assert isinstance(row["notes"], str) and row["notes"].strip()

    assert isinstance(row["held"], list)
    for held in row["held"]:
        assert set(held) == {"key", "value", "category"}
        assert SNAKE_CASE.match(held["key"]), held["key"]
        assert held["value"].strip()
        assert held["category"] in CATEGORIES

    assert row["messages"], "a conversation needs at least one message"
    assert row["messages"][0]["role"] == "user"
    for message in row["messages"]:
        assert set(message) == {"role", "text"}
        assert message["role"] in {"user", "assistant"}
        assert isinstance(message["text"], str) and message["text"].strip()

    assert isinstance(row["expected"], list)
    assert len(row["expected"]) <= 3
    for want in row["expected"]:
        assert set(want) == {"key", "category", "match_any"}
        assert SNAKE_CASE.match(want["key"]) and len(want["key"]) <= 64, want["key"]
        assert want["category"] in CATEGORIES
        assert want["match_any"], "match_any must not be empty"
        for word in want["match_any"]:
            assert isinstance(word, str) and word.strip(), "empty keyword"
            assert word == word.lower(), f"keyword not lower-case: {word!r}"
    keys = [want["key"] for want in row["expected"]]
    assert len(keys) == len(set(keys)), "two expected facts under one key"


def test_chinese_lines_are_traditional_chinese():
    """zh-Hant lines must actually be in Chinese (and not the simplified forms of common words)."""
    simplified = ("这", "们", "预订", "机票", "请问", "航线", "行李额", "谢谢")
    for row in ROWS:
        if row["lang"] != "zh-Hant":
            continue
        text = "".join(m["text"] for m in row["messages"])
        assert re.search(r"[\u4e00-\u9fff]", text), row["id"]
        assert not any(word in text for word in simplified), row["id"]


def test_enough_negatives_restatements_and_updates():
    negatives = [row for row in ROWS if not row["expected"]]
    assert len(negatives) >= 10
    restatements = [row for row in negatives if row["held"]]
    assert len(restatements) >= 2, "restating a held fact must be labelled as storing nothing"
    updates = [
        row for row in ROWS if {w["key"] for w in row["expected"]} & {h["key"] for h in row["held"]}
    ]
    assert len(updates) >= 2, "updating a held fact must be covered"
    assert any(len(row["expected"]) == 3 for row in ROWS), "a conversation with three facts"
    assert any(len(row["messages"]) >= 7 for row in ROWS), "some long multi-turn conversations"


def test_every_expected_fact_is_grounded_in_its_conversation():
    """A label whose keywords never occur in the user's words (in either language) is suspect:
    at least one keyword, or the key's topic, must be recognisable in what the user said."""
    for row in ROWS:
        said = " ".join(m["text"] for m in row["messages"] if m["role"] == "user").lower()
        for want in row["expected"]:
            assert any(word in said for word in want["match_any"]), (row["id"], want["key"])


def test_loader_reads_every_line():
    cases = bench.load_cases(DATA)
    assert [case.id for case in cases] == [row["id"] for row in ROWS]
    first = cases[0]
    assert first.messages[0]["role"] == "user"
    assert all(isinstance(want, bench.ExpectedFact) for case in cases for want in case.expected)


# --- The scorer ----------------------------------------------------------------------------------


def fact(value: str, key: str = "k") -> object:
    return bench.StoredFact(key=key, value=value, category="preference")


def want(*words: str, key: str = "k") -> object:
    return bench.ExpectedFact(key=key, category="preference", match_any=tuple(words))


def test_keyword_match_is_case_insensitive_and_substring():
    assert want("aisle").matches("Prefers AISLE seats")
    assert want("走道").matches("長途線習慣坐走道")
    assert not want("aisle").matches("Prefers window seats")


def test_precision_and_recall_on_a_small_run():
    scores = [
        # 1 of 2 expected found, 1 extra stored: precision 1/2, recall 1/2 here.
        bench.score_case(
            "a",
            "en",
            [fact("Prefers aisle seats"), fact("Flight CI100 costs $500")],
            [want("aisle"), want("red-eye", "overnight")],
        ),
        # A negative conversation that stored something.
        bench.score_case("b", "zh-Hant", [fact("下週改到 3 月 8 號")], []),
        # A negative conversation that stored nothing.
        bench.score_case("c", "en", [], []),
        # A perfect positive.
        bench.score_case("d", "zh-Hant", [fact("不搭紅眼班機")], [want("red-eye", "紅眼")]),
    ]
    totals = bench.summarize(scores)
    assert (totals.stored, totals.expected, totals.matched) == (4, 3, 2)
    assert totals.precision == pytest.approx(2 / 4)
    assert totals.recall == pytest.approx(2 / 3)
    assert (totals.negatives, totals.negatives_with_store) == (2, 1)

    by_lang = bench.summarize_by_language(scores)
    assert set(by_lang) == {"en", "zh-Hant"}
    assert by_lang["en"].precision == pytest.approx(1 / 2)
    assert by_lang["en"].recall == pytest.approx(1 / 2)
    assert by_lang["zh-Hant"].precision == pytest.approx(1 / 2)
    assert by_lang["zh-Hant"].recall == pytest.approx(1 / 1)
    assert by_lang["zh-Hant"].negatives_with_store == 1


def test_nothing_stored_gives_undefined_precision_not_perfect():
    totals = bench.summarize([bench.score_case("x", "en", [], [want("aisle")])])
    assert totals.precision is None
    assert totals.recall == 0
    assert bench.format_ratio(totals.precision) == "n/a"
    assert bench.format_ratio(totals.recall) == "0.0%"


def test_one_stored_fact_satisfies_only_one_expected_fact():
    score = bench.score_case(
        "x",
        "en",
        [fact("Travels with husband, prefers aisle")],
        [want("husband", key="travel_party"), want("aisle", key="seat_preference")],
    )
    assert score.matched == 1
    assert len(score.missed) == 1
    assert score.extra == []


def test_duplicate_stored_facts_do_not_both_count():
    score = bench.score_case(
        "x", "en", [fact("Prefers aisle seats"), fact("Likes the aisle")], [want("aisle")]
    )
    assert score.matched == 1
    assert [f.value for f in score.extra] == ["Likes the aisle"]
    assert bench.summarize([score]).precision == pytest.approx(1 / 2)


def test_matching_is_maximum_not_first_come():
    """The first stored value could match either label; a greedy scorer would give it the first
    one and leave the second stored value (which only fits the first label) unpaired."""
    stored = [fact("Travels with spouse, aisle seats"), fact("Usually flies with spouse")]
    expected = [want("spouse", key="travel_party"), want("aisle", key="seat_preference")]
    score = bench.score_case("x", "en", stored, expected)
    assert score.matched == 2
    assert score.perfect
    assert sorted(score.pairs) == [(0, 1), (1, 0)]


def test_miss_report_names_missed_and_unexpected_facts():
    score = bench.score_case(
        "x",
        "en",
        [bench.StoredFact(key="fare", value="CI100 is $500", category="context", is_update=True)],
        [want("aisle", key="seat_preference")],
    )
    lines = bench.describe_misses(score)
    assert any("missed" in line and "seat_preference" in line for line in lines)
    assert any(
        "unexpected" in line and "CI100 is $500" in line and "[update]" in line for line in lines
    )
    negative = bench.score_case("y", "en", [fact("Prefers aisle")], [])
    assert any("stored on a negative" in line for line in bench.describe_misses(negative))


# --- The script without a key ---------------------------------------------------------------------


def test_script_without_api_key_explains_and_exits_zero():
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--limit", "2"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    assert "ANTHROPIC_API_KEY" in lines[0]
    assert "not set" in lines[0]


def test_script_rejects_a_bad_limit():
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--limit", "0"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "--limit" in result.stderr


# --- The script against a local stand-in for the Messages API ------------------------------------


class _FakeServer(ThreadingHTTPServer):
    """Records every request body; `refuse` makes it answer 401 like a bad key would."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _FakeMessages)
        self.requests: list[dict] = []
        self.refuse = False


class _FakeMessages(BaseHTTPRequestHandler):
    """Answers POST /v1/messages like the real API: one record_fact call when the conversation
    mentions an aisle, none otherwise; or 401 when the server is set to refuse."""

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        fake = self.server
        assert isinstance(fake, _FakeServer)
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        fake.requests.append(body)
        if fake.refuse:
            self._reply(
                401,
                {
                    "type": "error",
                    "error": {"type": "authentication_error", "message": "invalid x-api-key"},
                },
            )
            return
        conversation = body["messages"][0]["content"].split("Conversation:", 1)[1]
        content: list[dict] = [{"type": "text", "text": "Nothing worth keeping."}]
        if "aisle" in conversation.lower():
            content = [
                {
                    "type": "tool_use",
                    "id": f"toolu_{len(fake.requests)}",
                    "name": "record_fact",
                    "input": {
                        "key": "seat_preference",
                        "value": "Prefers aisle seats",
                        "category": "preference",
                    },
                }
            ]
        used_tool = content[0]["type"] == "tool_use"
        self._reply(
            200,
            {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": content,
                "stop_reason": "tool_use" if used_tool else "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
        )

    def _reply(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence
        return


@pytest.fixture
def fake_api() -> Iterator[_FakeServer]:
    server = _FakeServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _case(case_id: str, lang: str, user_text: str, expected: list, held: list | None = None):
    return {
        "id": case_id,
        "lang": lang,
        "held": held or [],
        "notes": "test case",
        "messages": [{"role": "user", "text": user_text}],
        "expected": expected,
    }


def _run_script(server: _FakeServer, *args: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": "test-key-not-real",
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{server.server_address[1]}",
    }
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_script_scores_a_run_against_the_api(fake_api, tmp_path):
    aisle = {"key": "seat_preference", "category": "preference", "match_any": ["aisle", "走道"]}
    window = {"key": "seat_preference", "category": "preference", "match_any": ["window"]}
    rows = [
        _case("hit", "en", "I always sit on the aisle.", [aisle]),
        _case("wrong", "en", "Aisle this time, but I always take a window.", [window]),
        _case("quiet", "zh-Hant", "幫我改到明天。", []),
        _case(
            "restated",
            "en",
            "Aisle as usual, please.",
            [],
            held=[
                {"key": "seat_preference", "value": "Prefers aisle seats", "category": "preference"}
            ],
        ),
    ]
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")

    result = _run_script(fake_api, "--data", str(data), "--model", "claude-test-model")

    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert len(fake_api.requests) == 4
    assert {r["model"] for r in fake_api.requests} == {"claude-test-model"}
    assert "Prefers aisle seats" in fake_api.requests[3]["messages"][0]["content"]  # held sent
    # "hit" is perfect and not listed; "wrong" missed its label and stored something else;
    # "restated" stored nothing because dedup dropped the repeat of the held fact.
    assert "MISS wrong" in out and "MISS hit" not in out and "restated" not in out
    assert "missed   seat_preference" in out
    assert "unexpected: seat_preference = 'Prefers aisle seats'" in out
    overall = next(line for line in out.splitlines() if line.startswith("overall"))
    assert "precision  50.0% (1/2)" in overall
    assert "recall  50.0% (1/2)" in overall
    assert "negatives that stored something 0/2" in overall
    zh = next(line for line in out.splitlines() if line.startswith("zh-Hant"))
    assert "conversations   1" in zh and "precision    n/a (0/0)" in zh
    assert "input 400  output 80  calls 4  errors 0" in out


def test_script_stops_when_the_api_refuses_the_key(fake_api):
    fake_api.refuse = True
    result = _run_script(fake_api, "--limit", "3")
    assert result.returncode == 2
    assert "AuthenticationError" in result.stderr
    assert len(fake_api.requests) == 1, "one refusal is enough to stop"
