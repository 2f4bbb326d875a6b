"""A crashed pytest-xdist worker must not deadlock the run (loaded by tests/conftest.py).

pytest-xdist 3.8's file scheduler (`--dist loadfile`, scripts/test.sh) puts a crashed worker's
whole workload back on the queue, the files it had finished included. Its replacement gets those
as empty units, which never complete, so the run hangs at its end with idle workers
(pytest-xdist #1378). It also runs the test that crashed again, which crashes the replacement too
(#1371). A CI run hung so for an hour after a native crash in one test: a crash must fail that
test and the run, never hang it. `remove_node` below requeues only files with tests still to run
and counts the crashed test as done (xdist has already reported it failed); `_reschedule` keeps
a worker supplied until it holds two tests, tells it when no more will come, and waits for a
replacement's collection before giving it any.
"""

from __future__ import annotations


def apply() -> None:
    """Replace `remove_node` and `_reschedule` of `LoadScopeScheduling` (the base of loadfile)
    once; a no-op without xdist, or if its internals are not the ones this fix knows."""
    try:
        from xdist.scheduler.loadscope import LoadScopeScheduling
    except ImportError:
        return
    known = all(hasattr(LoadScopeScheduling, name) for name in ("_pending_of", "_reschedule"))
    if not known or getattr(LoadScopeScheduling.remove_node, "offsetkeeper_fix", False):
        return

    def remove_node(self, node):
        workload = self.assigned_work.pop(node)
        if not self._pending_of(workload):
            return None
        crashitem = next(nodeid for unit in workload.values()
                         for nodeid, completed in unit.items() if not completed)
        for unit in workload.values():
            if crashitem in unit:
                unit[crashitem] = True
        self.workqueue.update({scope: unit for scope, unit in workload.items()
                               if not all(unit.values())})
        for other in self.assigned_work:
            self._reschedule(other)
        return crashitem

    reschedule = LoadScopeScheduling._reschedule

    def _reschedule(self, node):
        # A worker runs a test only once it knows the next one, or that none will come: a
        # replacement given one unit with one test in it waited for ever (#1327). So it gets
        # units until it holds two tests, and is told when the queue is empty. A replacement
        # still collecting is left alone: it is scheduled when its collection is in (xdist
        # would hand it a unit it cannot index yet: KeyError, when two workers crashed).
        if node not in self.registered_collections:
            return
        try:
            reschedule(self, node)
            if node not in self.assigned_work or node.shutting_down:
                return
            while self.workqueue and self._pending_of(self.assigned_work[node]) < 2:
                self._assign_work_unit(node)
            if not self.workqueue:
                node.shutdown()
        except OSError:
            # the worker died after its last report (its channel is closed): its node-down
            # event follows, and `remove_node` puts what it held back on the queue
            return

    remove_node.offsetkeeper_fix = True
    LoadScopeScheduling.remove_node = remove_node
    LoadScopeScheduling._reschedule = _reschedule


def pytest_configure(config) -> None:
    apply()
