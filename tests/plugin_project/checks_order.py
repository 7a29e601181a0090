"""Stateful graphs whose result does or does not depend on the order of unordered nodes."""

import pytest

import aioflow as af


def _two_assigns_then_read(ordered: bool):
    """v = 1 and v = 2 (ordered: the second after the first), then read v after both."""
    v = af.Variable(0.0, name="v")
    first = af.assign(v, 1.0, name="first")
    with af.control_dependencies([first] if ordered else []):
        second = af.assign(v, 2.0, name="second")
    with af.control_dependencies([first, second]):
        read = af.identity(v, name="read")
    return af.global_variables_initializer(), read


async def test_last_assign_wins(af_session):
    """BUG (deliberate): nothing orders the two assigns; the test assumes `second` runs last,
    which the executor's fixed schedule happens to do."""
    init, read = _two_assigns_then_read(ordered=False)
    await af_session.run(init)
    assert await af_session.run(read) == 2.0


async def test_ordered_assigns(af_session):
    """The same graph with a control edge between the assigns: right under every schedule."""
    init, read = _two_assigns_then_read(ordered=True)
    await af_session.run(init)
    assert await af_session.run(read) == 2.0


def test_last_assign_wins_sync(af_graph):
    """The same deliberate bug through af.SyncSession (its runs are shuffled too)."""
    init, read = _two_assigns_then_read(ordered=False)
    sess = af.SyncSession(graph=af_graph)
    try:
        sess.run(init)
        assert sess.run(read) == 2.0
    finally:
        sess.close()


@pytest.mark.aioflow_fixed_schedule
async def test_kept_out_of_the_shuffle(af_session, af_schedule_seed):
    assert af_schedule_seed is None
    init, read = _two_assigns_then_read(ordered=False)
    await af_session.run(init)
    assert await af_session.run(read) == 2.0
