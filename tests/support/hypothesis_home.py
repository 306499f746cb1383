"""Hypothesis keeps its example database and caches in the temporary directory, not in the
checkout (its default is `.hypothesis/` in the working directory): no test writes into the
source tree. Imported by every test module that uses Hypothesis, before any of them runs."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis.configuration import set_hypothesis_home_dir

HOME = Path(tempfile.gettempdir()) / "memoryadmin-hypothesis"
set_hypothesis_home_dir(HOME)
