"""confirm: two tools need the user's confirmation; one is approved, one rejected (PAUSED twice)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply
from ..tooling import ToolEnv

RECIPIENT = "ana@example.com"


def draft_id(to: str, subject: str) -> str:
    return "draft-" + hashlib.sha256(f"{to}/{subject}".encode()).hexdigest()[:8]


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def draft_email(to: str, subject: str) -> str:
        """Write a draft email; returns its id."""
        return draft_id(to, subject)

    def send_email(draft_id: str) -> str:
        """Send a draft (needs the user's confirmation)."""
        return f"sent {draft_id}"

    def delete_mailbox(owner: str) -> str:
        """Delete a whole mailbox (needs the user's confirmation)."""
        return f"deleted the mailbox of {owner}"

    return [draft_email, send_email, delete_mailbox]


def _rejected(output: str | None) -> bool:
    text = (output or "").lower()
    return output is None or any(w in text for w in ("reject", "not confirm", "denied"))


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if not turns:
        return Reply.call("draft_email", to=RECIPIENT, subject="Quarterly report")
    if len(turns) == 1:
        draft = turns[0].output_of(turns[0].calls[0]) or "draft-missing"
        return Reply.call("send_email", draft_id=draft)
    if len(turns) == 2:
        return Reply.call("delete_mailbox", owner="old-reports@example.com")
    sent = turns[1].output_of(turns[1].calls[0]) or "(nothing sent)"
    deleted = turns[2].output_of(turns[2].calls[0])
    after = (
        "deleting the old mailbox was not confirmed, so it stays"
        if _rejected(deleted)
        else f"then {deleted}"
    )
    return Reply.final(f"Done: {sent}; {after}.")


SCENARIO = Scenario(
    name="confirm",
    description="two tools need confirmation: the run PAUSES twice; send_email is approved, "
    "delete_mailbox rejected",
    script=script,
    tools=tools,
    inputs=(f"Send the quarterly report to {RECIPIENT} and delete the old mailbox.",),
    expected=(
        Expected(
            content=f"Done: sent {draft_id(RECIPIENT, 'Quarterly report')}; deleting the old "
            "mailbox was not confirmed, so it stays.",
            calls=("draft_email", "send_email", "delete_mailbox"),
        ),
    ),
    confirm={"send_email": True, "delete_mailbox": False},
)
