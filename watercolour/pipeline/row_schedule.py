"""Which row a free decode slot starts next when rollouts are pipelined across steps, under a staleness bound.

Steps are numbered as the rollout store numbers them: step N's update trains on step N's rows, with the weights of
N - 1 updates. A row started while the weights had had V updates is `N - 1 - V` updates behind the weights that
train it, so with a bound of S a slot freed during step N's generation may start a row of steps N to N + S, never
later. Rows start in order (the earliest step first, then the row's place in its batch), so a step's own rows
always go before the next steps'. The schedule holds rows' results until their step takes them, in batch order.

`simulate` plays the schedule with rows of given lengths, a decode step at a time: the decode steps and the slots'
fill a pipelined step costs (what `watercolour.rehearsal.projection` projects with).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, order=True)
class Ticket:
    """A row of a step: `step` (whose update trains it), `index` (its place in that step's batch)."""

    step: int
    index: int


class RowSchedule:
    """The rows of every step, started within the bound and handed back a step at a time."""

    def __init__(self, rows_per_step: int, max_staleness: int, last_step: int) -> None:
        self.rows_per_step = rows_per_step
        self.max_staleness = max_staleness
        self.last_step = last_step
        self.started: dict[Ticket, int] = {}  # the weights' updates when the row started
        self.results: dict[Ticket, Any] = {}
        self.starts: dict[int, int] = {}  # rows started, by step (they start in batch order)
        self.ends: dict[int, int] = {}  # rows finished, by step

    def next_row(self, version: int) -> Ticket | None:
        """The row a free slot starts now, with weights of `version` updates: the first not yet started of steps
        `version + 1` to `version + 1 + max_staleness` (and the last step); None when all of those have started."""
        first = version + 1
        for step in range(first, min(first + self.max_staleness, self.last_step) + 1):
            index = self.starts.get(step, 0)
            if index < self.rows_per_step:
                ticket = Ticket(step, index)
                self.starts[step] = index + 1
                self.started[ticket] = version
                return ticket
        return None

    def finished(self, ticket: Ticket, result: Any) -> None:
        self.results[ticket] = result
        self.ends[ticket.step] = self.ends.get(ticket.step, 0) + 1

    def ready(self, step: int) -> bool:
        """Whether every row of `step` has finished."""
        return self.ends.get(step, 0) == self.rows_per_step

    def take(self, step: int) -> list[tuple[Any, int]]:
        """`step`'s rows in batch order: (result, the weights' updates when it started); the schedule forgets them."""
        tickets = [Ticket(step, index) for index in range(self.rows_per_step)]
        self.starts.pop(step, None)
        self.ends.pop(step, None)
        return [(self.results.pop(ticket), self.started.pop(ticket)) for ticket in tickets]

    def behind(self, ticket: Ticket) -> int:
        """How many updates the weights that train `ticket` are ahead of those that started it."""
        return ticket.step - 1 - self.started[ticket]

    def in_flight(self, version: int) -> int:
        """Rows started for steps after `version + 1` (the step being generated)."""
        return sum(ticket.step > version + 1 for ticket in self.started)


@dataclass(frozen=True)
class SimulatedStep:
    step: int
    decode_steps: int
    fill: float  # the share of slot-steps that held a row


def simulate(
    length: Callable[[Ticket], int], slots: int, rows_per_step: int, max_staleness: int, steps: int
) -> list[SimulatedStep]:
    """The decode steps and fill of `steps` pipelined steps whose rows take `length(ticket)` tokens each (the first
    comes with the row's prefill, each other with a decode step), slots refilled as soon as a row ends; the update
    between two steps decodes nothing. With `max_staleness=0` it is the synchronous step: a batch waits for its
    longest row."""
    schedule = RowSchedule(rows_per_step, max_staleness, steps)
    left: list[tuple[Ticket, int] | None] = [None] * slots  # each slot's row and the decode steps it has left
    measured = []
    for step in range(1, steps + 1):
        decode_steps, busy = 0, 0
        while True:
            for slot, held in enumerate(left):
                if held is None and (ticket := schedule.next_row(step - 1)) is not None:
                    remaining = length(ticket) - 1
                    if remaining > 0:
                        left[slot] = (ticket, remaining)
                    else:
                        schedule.finished(ticket, None)
            if schedule.ready(step):
                break
            # Every held row decodes until the first of them ends: nothing changes in between.
            run = min(remaining for held in left if held is not None for _, remaining in [held])
            held_count = sum(held is not None for held in left)
            decode_steps += run
            busy += run * held_count
            for slot, held in enumerate(left):
                if held is not None:
                    ticket, remaining = held
                    left[slot] = (ticket, remaining - run) if remaining > run else None
                    if remaining == run:
                        schedule.finished(ticket, None)
        schedule.take(step)
        measured.append(SimulatedStep(step, decode_steps, busy / (decode_steps * slots) if decode_steps else 1.0))
    return measured
