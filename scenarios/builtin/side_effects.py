"""side-effects: charge a card, then send the receipt by email and SMS in parallel.

Two scenarios share this flow and script:
  side-effects             plain tools: a repeated call charges or sends again (the
                           duplicates a crash may cause are held to the mode's bound);
  side-effects-idempotent  the same tools marked @idempotent, taking the runtime's
                           idempotency key: a repeated key has no effect (effect=False
                           in the ledger), so effective duplicates must be zero.

Both declare what one effect is (@intent): a charge is (customer, amount), a message is its
recipient. The ledger counts effects per intent, so a receipt re-sent with a reworded body
or the charge re-issued under a new call id is the same effect twice, and the idempotent
scenario's keys are judged per intent: a runtime whose key follows the call id, not the
call's place in the run, gives the re-issued charge a new key and charges again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply, ToolRequest
from ..tooling import ToolEnv, idempotent, intent

CUSTOMER = "cus_42"
AMOUNT_CENTS = 1999
EMAIL = "ana@example.com"
PHONE = "+351900000042"


def _ref(prefix: str, *parts: object) -> str:
    return prefix + hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:10]


def charge_text(customer: str, amount_cents: int) -> str:
    return f"{_ref('ch_', customer, amount_cents)}: charged {amount_cents} cents to {customer}"


def sent_text(channel: str, to: str, body: str) -> str:
    return f"{_ref(channel + '_', to, body)}: {channel} queued for {to}"


def plain_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    @intent("customer", "amount_cents")
    def charge_card(customer: str, amount_cents: int) -> str:
        """Charge the customer's card on file (a real effect on every call)."""
        return charge_text(customer, amount_cents)

    @intent("to")
    def send_email(to: str, body: str) -> str:
        """Send an email (a real effect on every call)."""
        return sent_text("email", to, body)

    @intent("to")
    def send_sms(to: str, body: str) -> str:
        """Send a text message (a real effect on every call)."""
        return sent_text("sms", to, body)

    return [charge_card, send_email, send_sms]


def idempotent_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    @intent("customer", "amount_cents")
    @idempotent
    def charge_card(customer: str, amount_cents: int, idempotency_key: str) -> str:
        """Charge the customer's card on file, once per idempotency key."""
        return charge_text(customer, amount_cents)

    @intent("to")
    @idempotent
    def send_email(to: str, body: str, idempotency_key: str) -> str:
        """Send an email, once per idempotency key."""
        return sent_text("email", to, body)

    @intent("to")
    @idempotent
    def send_sms(to: str, body: str, idempotency_key: str) -> str:
        """Send a text message, once per idempotency key."""
        return sent_text("sms", to, body)

    return [charge_card, send_email, send_sms]


def _charge_ref(output: str | None) -> str:
    return (output or "no-charge").split(":", 1)[0]


def receipt(charge: str) -> str:
    return f"Receipt {charge}: {AMOUNT_CENTS / 100:.2f} EUR."


def reworded(arguments: dict[str, Any]) -> dict[str, Any]:
    """The receipt as a model that re-plans might word it: the same message to the same
    recipient (the same intent), other words."""
    return {**arguments, "body": f"Your receipt: {arguments.get('body', '')}"}


# A re-planned receipt step words its messages otherwise (behaviours.py, `replan`).
REPLAN = {"send_email": reworded, "send_sms": reworded}


def final_text(charge: str, email: str | None, sms: str | None) -> str:
    refs = [(o or "not sent").split(":", 1)[0] for o in (email, sms)]
    return f"Charged {CUSTOMER} ({charge}); receipt sent by email ({refs[0]}) and SMS ({refs[1]})."


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if not turns:
        return Reply.call("charge_card", customer=CUSTOMER, amount_cents=AMOUNT_CENTS)
    charge = _charge_ref(turns[0].output_of(turns[0].calls[0]) if turns[0].calls else None)
    if len(turns) == 1:
        body = receipt(charge)
        return Reply.batch(
            ToolRequest("send_email", {"to": EMAIL, "body": body}),
            ToolRequest("send_sms", {"to": PHONE, "body": body}),
        )
    sends = {c.name: turns[1].output_of(c) for c in turns[1].calls}
    return Reply.final(final_text(charge, sends.get("send_email"), sends.get("send_sms")))


_CHARGE = _charge_ref(charge_text(CUSTOMER, AMOUNT_CENTS))
_EXPECTED = Expected(
    content=final_text(
        _CHARGE,
        sent_text("email", EMAIL, receipt(_CHARGE)),
        sent_text("sms", PHONE, receipt(_CHARGE)),
    ),
    calls=("charge_card", "send_email", "send_sms"),
)
_INPUT = f"Charge {CUSTOMER} for the order and send the receipt."

SCENARIO = Scenario(
    name="side-effects",
    description="non-idempotent charge_card, then send_email + send_sms in parallel "
    "(duplicates held to the mode's bound)",
    script=script,
    tools=plain_tools,
    inputs=(_INPUT,),
    expected=(_EXPECTED,),
    replan=REPLAN,
)

IDEMPOTENT_SCENARIO = Scenario(
    name="side-effects-idempotent",
    description="side-effects with @idempotent tools keyed by the runtime's idempotency key "
    "(zero effective duplicates)",
    script=script,
    tools=idempotent_tools,
    inputs=(_INPUT,),
    expected=(_EXPECTED,),
    replan=REPLAN,
)
