"""The judged metrics of a conversation: relevancy with a sliding window, and role
adherence. Each turn gets one verdict; the turns are judged in batches of
:data:`TURNS_PER_CALL` per judge call (the batches concurrently), so a long
conversation is neither one giant prompt nor one call per turn.

Formulas (n turns):

- ConversationRelevancyMetric(window_size=3): turn k's ``actual_output`` judged
  relevant to its ``input`` given turns k-window_size .. k-1 (yes/no); score =
  relevant turns / n.
- RoleAdherenceMetric: turn k's ``actual_output`` judged in the ``chatbot_role``
  (yes/no); score = adhering turns / n.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ._cases import ConversationalTestCase, LLMTestCase
from ._metric import BaseConversationalMetric, MissingTestCaseParamsError
from ._rag import judge_items, summary, tagged

__all__ = ["TURNS_PER_CALL", "ConversationRelevancyMetric", "RoleAdherenceMetric"]

#: Turns judged in one call.
TURNS_PER_CALL = 20


def _turn(case: LLMTestCase, index: int) -> str:
    return (
        f'<turn number="{index + 1}">\n{tagged("user", case.input)}\n'
        f"{tagged('assistant', case.actual_output)}\n</turn>"
    )


async def _batched(
    model: str | None, question: str, blocks: Sequence[str], data: str
) -> list[tuple[str, str]]:
    """One yes/no verdict per block, :data:`TURNS_PER_CALL` blocks per call."""
    batches = [blocks[i : i + TURNS_PER_CALL] for i in range(0, len(blocks), TURNS_PER_CALL)]
    answers = await asyncio.gather(
        *(judge_items(model, question, ("yes", "no"), batch, data) for batch in batches)
    )
    return [verdict for answer in answers for verdict in answer]


class ConversationRelevancyMetric(BaseConversationalMetric):
    """Whether each reply is relevant to what the user said, given the conversation so
    far: turn k is judged with the previous ``window_size`` turns (k-window_size ..
    k-1) as its context; score = relevant turns / turns.
    """

    name = "Conversation Relevancy"

    def __init__(
        self,
        window_size: int = 3,
        threshold: float = 0.5,
        model: str | None = None,
        include_reason: bool = True,
        strict_mode: bool = False,
    ) -> None:
        if isinstance(window_size, bool) or not isinstance(window_size, int) or window_size < 0:
            raise ValueError(f"window_size must be an int >= 0, got {window_size!r}")
        super().__init__(
            threshold=threshold, model=model, include_reason=include_reason, strict_mode=strict_mode
        )
        self.window_size = window_size

    def window(self, turns: Sequence[LLMTestCase], k: int) -> str:
        """Turn k's item: the previous ``window_size`` turns, then turn k."""
        earlier = range(max(0, k - self.window_size), k)
        context = (
            "\n".join(_turn(turns[i], i) for i in earlier) or "(none: the conversation starts)"
        )
        return f"{tagged('previous_turns', context)}\n{tagged('judged', _turn(turns[k], k))}"

    async def _a_score(self, test_case: ConversationalTestCase) -> tuple[float, str | None]:
        turns = test_case.turns
        blocks = [self.window(turns, k) for k in range(len(turns))]
        verdicts = await _batched(
            self.model,
            "is the assistant's reply in the judged turn relevant to what the user said "
            "there, given the previous turns shown with it? yes or no.",
            blocks,
            "Each item is one judged turn with the turns before it.",
        )
        labels = [f"turn {k + 1}" for k in range(len(turns))]
        return summary("turns are relevant", labels, verdicts, {"yes"})


class RoleAdherenceMetric(BaseConversationalMetric):
    """Whether the chatbot stays in the role it was given: each turn's
    ``actual_output`` is judged against ``chatbot_role`` (needed); score = adhering
    turns / turns.
    """

    name = "Role Adherence"

    def _check(self, test_case: object) -> None:
        super()._check(test_case)
        assert isinstance(test_case, ConversationalTestCase)
        if test_case.chatbot_role is None:
            raise MissingTestCaseParamsError(
                f"{self.__name__} needs the test case's chatbot_role, which is None"
            )

    async def _a_score(self, test_case: ConversationalTestCase) -> tuple[float, str | None]:
        turns = test_case.turns
        blocks = [_turn(turn, k) for k, turn in enumerate(turns)]
        verdicts = await _batched(
            self.model,
            "does the assistant's reply stay in the chatbot role given above (its persona, "
            "tone and limits)? yes or no.",
            blocks,
            tagged("chatbot_role", test_case.chatbot_role or ""),
        )
        labels = [f"turn {k + 1}" for k in range(len(turns))]
        return summary("turns adhere to the role", labels, verdicts, {"yes"})
