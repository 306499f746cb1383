"""Run a piece of work in a forked child process and give up on it after a deadline.

For the tests that prove something cannot hang (a backtracking pattern on a hostile value): a
thread is not enough, because Python's `re` does not release the GIL while it matches, so a
runaway match in a thread freezes the test itself instead of failing it. A child process can
be killed; the test then fails with its assertion, as on a server whose worker is killed at
its timeout."""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable
from typing import Any

TIMED_OUT = object()


def _child(work: Callable[[], Any], sender: Any) -> None:
    try:
        sender.send(("ok", work()))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises
        sender.send(("error", traceback.format_exc()))


def run_within(seconds: float, work: Callable[[], Any]) -> Any:
    """`work()`'s result, or TIMED_OUT when it was still running after `seconds` (then killed).
    Close the parent's database connections before calling: the child must not share them."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(work, sender), daemon=True)
    child.start()
    sender.close()
    try:
        if not receiver.poll(seconds):
            return TIMED_OUT
        kind, value = receiver.recv()
    finally:
        if child.is_alive():
            child.kill()
        child.join(10)
        receiver.close()
    if kind == "error":
        raise AssertionError(f"the work failed in the child:\n{value}")
    return value
