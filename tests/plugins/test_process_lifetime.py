"""A plugin process dropped without ``stop``: nothing of it is left to the collector."""

from __future__ import annotations

import gc
import sys
import warnings

from scm_plugins.external.accounting import LineAccount
from scm_plugins.external.process import PluginProcess


def _dropped(argv: list[str]) -> list[warnings.WarningMessage]:
    """Start ``argv`` as a plugin, wait for its reader to end, drop it, collect: the
    warnings the collection raised."""
    process = PluginProcess(argv, label="gone", env={}, account=LineAccount("p", "gone"))
    process._reader.join(30)
    process._logger.join(30)
    assert not process._reader.is_alive()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        del process
        gc.collect()
    return seen


def test_a_plugin_that_exited_and_was_dropped_leaves_no_pipe_and_no_unwaited_child() -> None:
    seen = _dropped([sys.executable, "-c", "pass"])
    assert [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)] == []


def test_a_plugin_that_closed_its_output_but_runs_on_is_killed_when_dropped() -> None:
    # It closes stdout and stderr, then sleeps: the reader ends, the process runs on.
    code = "import os, time; os.close(1); os.close(2); time.sleep(60)"
    seen = _dropped([sys.executable, "-c", code])
    assert [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)] == []
