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


# --- The gold set ---------------------------------------------------------------------------------


def test_the_real_gold_set_is_consistent():
    """The whole check, quotas included, on the committed file: no problem at all."""
    problems = bench.check_gold(ROWS)
    assert problems == [], "\n".join(str(p) for p in problems)


def test_the_gold_set_is_as_big_and_as_spread_as_the_evaluation_needs():
    langs = Counter(row["lang"] for row in ROWS)
    assert len(ROWS) >= 155
    assert langs["zh-Hant"] >= 52
    assert langs["zh-Hant"] * 3 >= len(ROWS)
    cells = bench.count_labels(ROWS)
    for rule in bench.RULES:
        assert sum(cells.get((lang, rule), 0) for lang in bench.LANGUAGES) >= 15, rule
        for lang in bench.LANGUAGES:
            assert cells.get((lang, rule), 0) >= 5, (rule, lang)


@pytest.mark.parametrize("row", ROWS, ids=[row["id"] for row in ROWS])
def test_every_conversation_is_consistent_on_its_own(row):
    assert bench.check_row(row) == []


def test_the_checks_constants_are_the_apps():
    """Categories, the quote limit and the key rule are the app's, not a copy that can drift."""
    from memoryadmin.facts.choices import Category
    from memoryadmin.facts.validation import EVIDENCE_MAX_LENGTH, validate_fact

    assert set(bench.CATEGORIES) == set(Category.values)
    assert bench.QUOTE_MAX_LENGTH == EVIDENCE_MAX_LENGTH
    keys = {w["key"] for row in ROWS for w in row["expected"]}
    keys |= {h["key"] for row in ROWS for h in row["held"]}
    for key in keys:
        assert validate_fact(key, "a value").key == key


def test_chinese_lines_are_traditional_chinese():
    """zh-Hant lines must actually be in Chinese (and not the simplified forms of common words)."""
    simplified = (
        "这", "们", "预订", "机票", "请问", "航线", "行李额", "谢谢", "转机",
        "座位号", "靠过道", "过道", "登机", "托运", "航班号", "飞机", "会员",
    )  # fmt: skip
    for row in ROWS:
        if row["lang"] != "zh-Hant":
            continue
        text = "".join(m["text"] for m in row["messages"])
        assert re.search(r"[\u4e00-\u9fff]", text), row["id"]
        assert not any(word in text for word in simplified), row["id"]


def test_enough_restatements_updates_and_long_conversations():
    negatives = [row for row in ROWS if not row["expected"]]
    assert {row["rule"] for row in negatives} == set(bench.LABELS) - bench.STORING_LABELS
    restatements = [row for row in negatives if row["held"]]
    assert len(restatements) >= 2, "restating a held fact must be labelled as storing nothing"
    for row in ROWS:
        if row["rule"] == "update":
            held = {h["key"] for h in row["held"]}
            assert {w["key"] for w in row["expected"]} & held, row["id"]
    assert any(len(row["expected"]) == 3 for row in ROWS), "a conversation with three facts"
    assert any(len(row["messages"]) >= 7 for row in ROWS), "some long multi-turn conversations"
    multi = [row for row in ROWS if len(row["expected"]) >= 2]
    assert {row["lang"] for row in multi} == {"en", "zh-Hant"}, "multi-topic in both languages"


def test_every_expected_fact_is_grounded_in_its_conversation():
    """A label whose keywords never occur in the user's words (in either language) is suspect:
    at least one keyword, or the key's topic, must be recognisable in what the user said."""
    for row in ROWS:
        said = " ".join(m["text"] for m in row["messages"] if m["role"] == "user").lower()
        for want in row["expected"]:
            assert any(word in said for word in want["match_any"]), (row["id"], want["key"])


# --- The check finds what is wrong, by name -------------------------------------------------------


def _good_row(**changes: object) -> dict:
    row = {
        "id": "t-keep",
        "lang": "en",
        "rule": "keep",
        "held": [],
        "messages": [
            {"role": "user", "text": "I always sit on the aisle. Book me to Denver."},
            {"role": "assistant", "text": "Done, and you have an aisle seat by the window side."},
        ],
        "expected": [
            {
                "key": "seat_preference",
                "category": "preference",
                "match_any": ["aisle", "走道"],
                "quote": "I always sit on the aisle.",
            }
        ],
        "notes": "test row",
    }
    row.update(changes)
    return row


def _with_fact(**changes: object) -> dict:
    row = _good_row()
    row["expected"] = [{**row["expected"][0], **changes}]
    return row


def _names(rows: list[dict]) -> set[str]:
    return {problem.name for problem in bench.check_gold(rows, quotas=False)}


HELD_SEAT = [{"key": "seat_preference", "value": "Prefers window seats", "category": "preference"}]


def test_the_crafted_good_row_has_no_problem():
    assert bench.check_gold([_good_row()], quotas=False) == []
    assert bench.check_gold([_good_row(rule="update", held=HELD_SEAT)], quotas=False) == []
    assert bench.check_gold([_good_row(rule="one_off", expected=[])], quotas=False) == []


@pytest.mark.parametrize(
    ("row", "name"),
    [
        (_with_fact(quote="I never sit on the aisle."), "quote_not_in_conversation"),
        # The agent's words are not the traveller's: a quote of the assistant does not count.
        (_with_fact(quote="you have an aisle seat"), "quote_not_in_conversation"),
        (_with_fact(quote=""), "quote_missing"),
        (_with_fact(quote="Book me to Denver."), "quote_without_keyword"),
        (_with_fact(category="habit"), "bad_category"),
        (_with_fact(key="Seat Preference"), "bad_key"),
        (_with_fact(key="seat-preference"), "bad_key"),
        (_with_fact(key="_seat"), "bad_key"),
        (_with_fact(key="k" * 65), "bad_key"),
        (_with_fact(match_any=["Aisle"]), "bad_match_any"),
        (_good_row(rule="update"), "update_without_held"),
        (
            _good_row(
                rule="update",
                held=[{"key": "meal_preference", "value": "Vegetarian", "category": "preference"}],
            ),
            "update_without_held",
        ),
        (_good_row(held=HELD_SEAT), "keep_of_held_key"),
        (_good_row(rule="keep", expected=[]), "keep_without_expected"),
        (_good_row(rule="remember"), "bad_rule"),
        (_good_row(rule="one_off"), "dont_keep_with_expected"),
        (_good_row(rule="inference"), "dont_keep_with_expected"),
        (_good_row(lang="zh-TW"), "bad_lang"),
        (
            _good_row(held=[{"key": "seat_preference", "value": "x", "category": "seat"}]),
            "bad_category",
        ),
        (_good_row(notes=""), "no_notes"),
        (
            _good_row(messages=[{"role": "assistant", "text": "I always sit on the aisle."}]),
            "bad_messages",
        ),
    ],
)
def test_a_bad_row_is_named(row, name):
    problems = bench.check_gold([row], quotas=False)
    assert name in {p.name for p in problems}, problems
    assert all(p.case_id == row["id"] for p in problems)


def test_a_duplicate_id_is_named():
    assert _names([_good_row(), _good_row()]) == {"duplicate_id"}


def test_the_quotas_are_named():
    few = [_good_row(id=f"t-{i}") for i in range(10)]
    names = {p.name for p in bench.check_gold(few)}
    assert {"too_few_conversations", "too_few_zh-Hant", "too_few_for_rule"} <= names
    # The real set less its Chinese conversations: big enough, but no longer a third Chinese.
    english = [row for row in ROWS if row["lang"] == "en"]
    names = {p.name for p in bench.check_quotas(english + english[:60])}
    assert "too_few_zh-Hant" in names
    # One rule thinned out in one language: four of its Chinese conversations dropped.
    zh_inference = [r["id"] for r in ROWS if r["lang"] == "zh-Hant" and r["rule"] == "inference"]
    dropped = set(zh_inference[: len(zh_inference) - 4])
    thinned = [row for row in ROWS if row["id"] not in dropped]
    problems = bench.check_quotas(thinned)
    assert [p.detail for p in problems] == ["inference in zh-Hant: 4 < 5"]


def test_the_table_counts_languages_and_rules():
    rows = [
        _good_row(id="a"),
        _good_row(id="b", lang="zh-Hant"),
        _good_row(id="c", rule="one_off", expected=[]),
    ]
    header, en, zh, total = bench.format_label_table(rows)
    assert header.split() == [*bench.LABELS, "total"]
    assert en.split() == ["en", "1", "0", "1", "0", "0", "0", "2"]
    assert zh.split() == ["zh-Hant", "1", "0", "0", "0", "0", "0", "1"]
    assert total.split() == ["total", "2", "0", "1", "0", "0", "0", "3"]


def test_read_rows_names_a_broken_line(tmp_path):
    data = tmp_path / "bad.jsonl"
    data.write_text('{"id": "x"}\nnot json\n[1]\n', encoding="utf-8")
    rows, problems = bench.read_rows(data)
    assert rows == [{"id": "x"}]
    assert [(p.case_id, p.name) for p in problems] == [
        ("line 2", "bad_json"),
        ("line 3", "bad_json"),
    ]
    assert "bad_fields" in {p.name for p in bench.check_gold(rows, quotas=False)}


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


def _run(*cases: tuple) -> list:
    """(id, lang, rule, stored values, expected keyword lists) -> scores."""
    return [
        bench.score_case(case_id, lang, [fact(v) for v in stored], [want(*w) for w in wanted], rule)
        for case_id, lang, rule, stored, wanted in cases
    ]


HAND_MADE = (
    # keep: en perfect; zh one stored match, one miss, one extra.
    ("k1", "en", "keep", ["Prefers aisle seats"], [["aisle"]]),
    ("k2", "zh-Hant", "keep", ["長途坐走道", "下週三去東京"], [["走道"], ["紅眼"]]),
    # update: en stored the new value; zh stored nothing.
    ("u1", "en", "update", ["Now prefers window seats"], [["window"]]),
    ("u2", "zh-Hant", "update", [], [["小港"]]),
    # one_off: en stored this trip's date (a false positive); zh stored nothing.
    ("o1", "en", "one_off", ["Flies to Boston on the 16th"], []),
    ("o2", "zh-Hant", "one_off", [], []),
    # query_result: nothing stored anywhere.
    ("q1", "en", "query_result", [], []),
    # inference: zh stored the agent's guess twice.
    ("i1", "zh-Hant", "inference", ["可能偏好商務艙", "常出差"], []),
)


def test_precision_and_recall_per_rule_and_language_on_hand_made_facts():
    scores = _run(*HAND_MADE)
    by_rule = bench.summarize_by_rule(scores)
    assert list(by_rule) == ["keep", "update", "one_off", "query_result", "inference"]

    keep = by_rule["keep"]
    assert (keep.stored, keep.expected, keep.matched) == (3, 3, 2)
    assert keep.precision == pytest.approx(2 / 3) and keep.recall == pytest.approx(2 / 3)
    update = by_rule["update"]
    assert (update.precision, update.recall) == (1.0, 0.5)
    one_off = by_rule["one_off"]
    assert (one_off.precision, one_off.recall) == (0.0, None)
    assert (one_off.negatives, one_off.negatives_with_store) == (2, 1)
    query = by_rule["query_result"]
    assert (query.precision, query.recall, query.negatives_with_store) == (None, None, 0)
    inference = by_rule["inference"]
    assert (inference.stored, inference.precision, inference.negatives_with_store) == (2, 0.0, 1)

    cells = bench.summarize_by_rule_and_language(scores)
    assert list(cells)[:4] == [
        ("keep", "en"),
        ("keep", "zh-Hant"),
        ("update", "en"),
        ("update", "zh-Hant"),
    ]
    assert (cells["keep", "en"].precision, cells["keep", "en"].recall) == (1.0, 1.0)
    assert (cells["keep", "zh-Hant"].precision, cells["keep", "zh-Hant"].recall) == (0.5, 0.5)
    assert cells["update", "zh-Hant"].precision is None and cells["update", "zh-Hant"].recall == 0
    assert cells["one_off", "en"].precision == 0.0 and cells["one_off", "zh-Hant"].stored == 0

    by_lang = bench.summarize_by_language(scores)
    assert (by_lang["en"].stored, by_lang["en"].matched, by_lang["en"].expected) == (3, 2, 2)
    assert (by_lang["zh-Hant"].stored, by_lang["zh-Hant"].matched) == (4, 1)
    assert by_lang["zh-Hant"].recall == pytest.approx(1 / 3)
    overall = bench.summarize(scores)
    assert (overall.stored, overall.matched, overall.expected) == (7, 3, 5)


PERFECT = {
    "keep": ("p-keep", "keep", ["Prefers aisle seats"], [["aisle"]]),
    "update": ("p-update", "update", ["Now prefers window seats"], [["window"]]),
    "one_off": ("p-one-off", "one_off", [], []),
    "query_result": ("p-query", "query_result", [], []),
    "inference": ("p-inference", "inference", [], []),
}


def _perfect_run(lang: str) -> list[tuple]:
    return [(f"{case_id}-{lang}", lang, rule, s, w) for case_id, rule, s, w in PERFECT.values()]


def _is_perfect(totals) -> bool:
    return totals.precision in (None, 1.0) and totals.recall in (None, 1.0)


@pytest.mark.parametrize("lang", bench.LANGUAGES)
@pytest.mark.parametrize("rule", bench.RULES)
def test_each_rules_precision_can_fail(rule, lang):
    """A perfect run scores perfectly; one extra stored fact in one rule and one language lowers
    that cell's precision, its rule's and its language's, and no other rule's."""
    cases = _perfect_run("en") + _perfect_run("zh-Hant")
    scores = _run(*cases)
    assert all(_is_perfect(t) for t in bench.summarize_by_rule_and_language(scores).values())
    assert all(_is_perfect(t) for t in bench.summarize_by_rule(scores).values())

    spoiled = [
        (c, lg, r, [*s, "Flies to Tokyo next Wednesday"], w)
        if (r, lg) == (rule, lang)
        else (c, lg, r, s, w)
        for c, lg, r, s, w in cases
    ]
    scores = _run(*spoiled)
    cells = bench.summarize_by_rule_and_language(scores)
    assert cells[rule, lang].precision is not None and cells[rule, lang].precision < 1
    assert bench.summarize_by_rule(scores)[rule].precision < 1
    assert bench.summarize_by_language(scores)[lang].precision < 1
    others = {cell: t for cell, t in cells.items() if cell != (rule, lang)}
    assert all(_is_perfect(t) for t in others.values())
    if rule not in bench.STORING_LABELS:
        assert cells[rule, lang].negatives_with_store == 1


@pytest.mark.parametrize("lang", bench.LANGUAGES)
@pytest.mark.parametrize("rule", sorted(bench.STORING_LABELS))
def test_each_storing_rules_recall_can_fail(rule, lang):
    """keep and update expect facts: storing nothing (or the wrong value) lowers their recall.
    The don't-keep rules expect nothing, so their recall is n/a and only precision can fail."""
    cases = _perfect_run("en") + _perfect_run("zh-Hant")
    spoiled = [
        (c, lg, r, ["Something else entirely"], w) if (r, lg) == (rule, lang) else (c, lg, r, s, w)
        for c, lg, r, s, w in cases
    ]
    scores = _run(*spoiled)
    cells = bench.summarize_by_rule_and_language(scores)
    assert cells[rule, lang].recall == 0
    assert bench.summarize_by_rule(scores)[rule].recall == pytest.approx(1 / 2)
    assert all(_is_perfect(t) for cell, t in cells.items() if cell != (rule, lang))
    for negative in set(bench.RULES) - bench.STORING_LABELS:
        assert cells[negative, lang].recall is None


# --- The script without a key ---------------------------------------------------------------------


def _run_without_key(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_script_without_api_key_checks_the_gold_set_explains_and_exits_zero():
    result = _run_without_key("--limit", "2")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.strip().splitlines()
    assert lines[0] == f"extraction_eval: gold set extraction_eval.jsonl, {len(ROWS)} conversations"
    assert lines[1].split() == [*bench.LABELS, "total"]
    assert lines[2:5] == bench.format_label_table(ROWS)[1:]
    assert lines[5] == "extraction_eval: the gold set is consistent."
    assert "ANTHROPIC_API_KEY" in lines[6] and "not set" in lines[6]
    assert len(lines) == 7
    assert result.stderr == ""


def test_script_exits_one_on_an_inconsistent_gold_set_with_or_without_a_key(tmp_path):
    bad = _good_row(id="broken")
    bad["expected"][0]["quote"] = "I never said this."
    data = tmp_path / "bad.jsonl"
    data.write_text(json.dumps(bad) + "\n" + json.dumps(_good_row(id="fine")), encoding="utf-8")
    result = _run_without_key("--data", str(data))
    assert result.returncode == 1
    assert "broken: quote_not_in_conversation" in result.stderr
    assert "inconsistent (1 problems)" in result.stderr
    assert "ANTHROPIC_API_KEY" not in result.stdout


def test_script_rejects_a_bad_limit():
    result = _run_without_key("--limit", "0")
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


def _case(
    case_id: str,
    lang: str,
    rule: str,
    user_text: str,
    expected: list,
    held: list | None = None,
):
    return {
        "id": case_id,
        "lang": lang,
        "rule": rule,
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
    seat = {"key": "seat_preference", "category": "preference"}
    aisle = {**seat, "match_any": ["aisle", "走道"], "quote": "I always sit on the aisle."}
    window = {**seat, "match_any": ["window"], "quote": "I always take a window."}
    rows = [
        _case("hit", "en", "keep", "I always sit on the aisle.", [aisle]),
        _case("wrong", "en", "keep", "Aisle this time, but I always take a window.", [window]),
        _case("quiet", "zh-Hant", "one_off", "幫我改到明天。", []),
        _case(
            "restated",
            "en",
            "one_off",
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
    lines = out.splitlines()
    keep = next(line for line in lines if line.startswith("rule keep "))
    assert "conversations   2" in keep and "precision  50.0% (1/2)" in keep
    assert "recall  50.0% (1/2)" in keep
    one_off = next(line for line in lines if line.startswith("rule one_off "))
    assert "precision    n/a (0/0)" in one_off and "negatives that stored something 0/2" in one_off
    assert any(line.startswith("rule keep en ") for line in lines)
    assert any(line.startswith("rule one_off zh-Hant ") for line in lines)
    assert not any(line.startswith("rule update") for line in lines), "no update conversation"


def test_script_stops_when_the_api_refuses_the_key(fake_api):
    fake_api.refuse = True
    result = _run_script(fake_api, "--limit", "3")
    assert result.returncode == 2
    assert "AuthenticationError" in result.stderr
    assert len(fake_api.requests) == 1, "one refusal is enough to stop"
