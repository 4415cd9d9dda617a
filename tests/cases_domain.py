"""A test domain that uses optional values, parameter defaults, tool cases and soft
failures (a ticket desk with a login session): shared by the codegen differential test,
the z3 agreement test and the task-generation tests of these constructs."""

from __future__ import annotations

from graphgen.domain import Domain
from graphgen.load import loads_domain

CASES = """
name: desk
description: A ticket desk with one login session.
policy: Only the logged-in user edits tickets.
enums:
  Level: [low, mid, high]
entities:
  User:
    key: {name: user_id, prefix: "U", width: 3, givable: true}
    fields:
      name: {type: str, vocab: first_name}
      manager: "User | None"
  Session:
    key: {name: session_id, prefix: "S", width: 1}
    size: 1
    fields:
      user_id: "User | None"
  Ticket:
    key: {name: ticket_id, prefix: "T", width: 3, givable: true}
    fields:
      title: {type: str, vocab: word}
      priority: {type: "int | None", min: 1, max: 5}
      level: "Level | None"
      owner: "User | None"
      due: "date | None"
      closed: bool
tools:
  login:
    description: Log a user in.
    params: {user_id: User}
    cases:
      - when: "Session['S1'].user_id is None"
        effects: ["Session['S1'].user_id = user_id"]
        returns: "{'success': True, 'message': 'Logged in.'}"
      - fails: true
        returns: "{'success': False, 'message': 'Someone is already logged in.'}"
    intents: ["Log me in as {user_id}."]
  logout:
    params: {}
    cases:
      - when: "Session['S1'].user_id is not None"
        effects: ["Session['S1'].user_id = None"]
        returns: "{'success': True, 'message': 'Logged out.'}"
      - fails: true
        returns: "{'success': False, 'message': 'Nobody is logged in.'}"
    intents: ["Log me out."]
  whoami:
    params: {}
    returns: "User[Session['S1'].user_id].name if Session['S1'].user_id is not None else 'nobody'"
  edit_ticket:
    description: Change a ticket; absent arguments keep their field.
    params:
      ticket_id: Ticket
      priority: {type: "int | None", default: null, min: 1, max: 5}
      level: {type: "Level | None", default: null}
      owner: {type: "User | None", default: null}
    requires:
      - {check: "Session['S1'].user_id is not None", message: "Log in first."}
      - {check: "not Ticket[ticket_id].closed", message: "Ticket {ticket_id} is closed."}
      - "priority is None or priority != Ticket[ticket_id].priority"
    effects:
      - >-
        Ticket[ticket_id].priority = priority if priority is not None
        else Ticket[ticket_id].priority
      - "Ticket[ticket_id].level = level if level is not None else Ticket[ticket_id].level"
      - "Ticket[ticket_id].owner = owner if owner is not None else Ticket[ticket_id].owner"
    returns: "Ticket[ticket_id]"
    intents:
      - "Set the priority of ticket {ticket_id} to {priority}."
      - "Make ticket {ticket_id} {level}."
      - "Give ticket {ticket_id} to {owner}."
  clear_priority:
    params: {ticket_id: Ticket}
    requires: ["Ticket[ticket_id].priority is not None"]
    effects: ["Ticket[ticket_id].priority = None"]
    returns: "{'was': old(Ticket[ticket_id].priority), 'now': Ticket[ticket_id].priority}"
    intents: ["Clear the priority of ticket {ticket_id}."]
  close:
    params: {ticket_id: Ticket, note: {type: "str | None", default: "done"}}
    cases:
      - when: "Ticket[ticket_id].closed"
        fails: true
        returns: "'already closed'"
      - when: >-
          Ticket[ticket_id].owner is not None and Ticket[ticket_id].priority is not None
          and Ticket[ticket_id].priority >= 4
        effects: ["Ticket[ticket_id].closed = True", "Ticket[ticket_id].priority = 1"]
        returns: "note if note is not None else 'closed urgent'"
      - when: "Ticket[ticket_id].owner is not None"
        effects: ["Ticket[ticket_id].closed = True"]
        returns: "'closed'"
    intents: ["Close ticket {ticket_id}."]
  open_ticket:
    params:
      title: str
      priority: {type: "int | None", default: 3, min: 1, max: 5}
      due: {type: "date | None", default: null}
    effects:
      - >-
        t = Ticket.create(title=title, priority=priority, level=None,
        owner=Session['S1'].user_id, due=due, closed=False)
    returns: "t"
  urgent:
    params: {}
    returns: "[t.ticket_id for t in Ticket if t.priority is not None and t.priority >= 4]"
  unowned_count:
    params: {}
    returns: "count(t for t in Ticket if t.owner is None or User[t.owner].manager is None)"
"""


def cases_domain() -> Domain:
    """The domain above, loaded."""
    return loads_domain(CASES, source="<desk>")
