"""The row schedule of pipelined rollouts: a freed slot starts the earliest row the staleness bound allows, a step
is handed its own rows in order, and the simulated schedule keeps the batch full where a synchronous one cannot."""

from __future__ import annotations

import random
import statistics

import pytest

from watercolour.pipeline.row_schedule import RowSchedule, Ticket, simulate
from watercolour.rehearsal.lengths import recipe_lengths


def test_a_free_slot_starts_this_steps_rows_then_the_next_steps_within_the_bound() -> None:
    schedule = RowSchedule(rows_per_step=2, max_staleness=1, last_step=10)
    # Generating step 3 (the weights have had 2 updates): its own rows first, then step 4's, never step 5's.
    started = [schedule.next_row(version=2) for _ in range(5)]
    assert started == [Ticket(3, 0), Ticket(3, 1), Ticket(4, 0), Ticket(4, 1), None]
    # After the update, step 5's rows may start: they will be one update behind when step 5 trains them.
    assert schedule.next_row(version=3) == Ticket(5, 0)
    assert schedule.behind(Ticket(4, 1)) == 1 and schedule.behind(Ticket(3, 0)) == 0


def test_no_row_is_trained_more_than_the_bound_behind_the_weights_that_began_it() -> None:
    draw = random.Random(0)
    for bound in (0, 1, 3):
        schedule = RowSchedule(rows_per_step=4, max_staleness=bound, last_step=40)
        for version in range(40):
            for _ in range(draw.randint(0, 6)):  # however many slots free up while the weights are at `version`
                ticket = schedule.next_row(version)
                if ticket is not None:
                    assert 0 <= schedule.behind(ticket) <= bound


def test_a_step_is_handed_its_rows_in_batch_order_with_the_weights_each_began_with() -> None:
    schedule = RowSchedule(rows_per_step=3, max_staleness=1, last_step=5)
    for _ in range(3):
        schedule.next_row(version=0)
    ahead = [schedule.next_row(version=0) for _ in range(2)]  # two rows of step 2 start during step 1
    for index in (2, 0, 1):
        schedule.finished(Ticket(1, index), f"row {index}")
    assert schedule.ready(1) and not schedule.ready(2)
    assert schedule.take(1) == [("row 0", 0), ("row 1", 0), ("row 2", 0)]
    assert schedule.next_row(version=1) == Ticket(2, 2)
    for ticket in [*ahead, Ticket(2, 2)]:
        assert ticket is not None
        schedule.finished(ticket, ticket.index)
    assert schedule.take(2) == [(0, 0), (1, 0), (2, 1)]


def recipe_draws(generations: int, budget: int = 8192):
    groups: dict[int, list[int]] = {}
    draw = random.Random(0)

    def length(ticket: Ticket) -> int:
        if ticket.step not in groups:
            groups[ticket.step] = [recipe_lengths(draw, budget) for _ in range(generations)]
        return groups[ticket.step][ticket.index]

    return length


def test_a_synchronous_step_decodes_until_its_longest_row_ends() -> None:
    lengths = {Ticket(1, 0): 5, Ticket(1, 1): 40, Ticket(2, 0): 30, Ticket(2, 1): 10}
    steps = simulate(lengths.__getitem__, slots=2, rows_per_step=2, max_staleness=0, steps=2)
    # The first token of a row comes with its prefill; each other is a decode step.
    assert [step.decode_steps for step in steps] == [39, 29]
    assert steps[0].fill == pytest.approx((4 + 39) / (2 * 39))


def test_pipelined_rows_keep_the_batch_full_at_the_recipes_lengths() -> None:
    def mean(bound: int, field: str) -> float:
        return statistics.fmean(getattr(step, field) for step in simulate(recipe_draws(8), 8, 8, bound, 300)[1:])

    # Synchronous, the batch is half empty (the recipe's longest row of eight, 4,362 tokens, against 1,983 on
    # average); a bound of one update fills most of it, two nearly all.
    assert mean(0, "fill") < 0.55 and mean(0, "decode_steps") > 4000
    assert mean(1, "fill") > 0.8 and mean(2, "fill") > 0.95
    assert mean(2, "decode_steps") < 0.55 * mean(0, "decode_steps")
