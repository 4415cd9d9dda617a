"""Keys of tables: int ids and formatted counters.

One place for what the kind of an entity's key decides, so the loader, the state, the
interpreter, the state generator and the compiled package agree:

* the runtime type of an id (``int`` for ``key: {type: int}``, else ``str``);
* how a JSON state names rows (object keys are always strings: ``"3"`` is int id 3);
* the id the next ``create`` takes (a counter that never falls behind the largest int
  id of the table).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from graphgen.domain import EntityDef, Key
from graphgen.spec import EntitySpec
from graphgen.vocabulary import airport_city, load_vocab, vocab_file_exists, vocab_problem

KEY_TYPES = ("str", "int")


def key_spec_problems(es: EntitySpec) -> list[str]:
    """What is wrong with an entity's ``key:`` options (empty when nothing is)."""
    k = es.key
    out: list[str] = []
    if k.type not in KEY_TYPES:
        out.append(f"key type {k.type!r} is not one of str, int")
        return out
    given = k.model_fields_set
    if k.type == "int":
        for opt in ("prefix", "width"):
            if opt in given:
                out.append(f"an int key has no {opt} (ids are the numbers 1, 2, ...)")
    if k.vocab is not None and k.kind != "data":
        out.append("only a key given by the data (type: str, no prefix or width) takes a vocab")
    elif k.vocab is not None and (why := vocab_problem(k.vocab)) is not None:
        out.append(why)
    elif k.vocab is not None and key_words(k.vocab) is None:
        out.append(
            f"vocab {k.vocab!r} makes values, not a list of words ids can be drawn from; "
            "a key takes airport_code or a word-list vocabulary (cities, colors, words, ...)"
        )
    return out


def key_words(vocab: str) -> list[str] | None:
    """The distinct words generated ids of a data-given key are drawn from, sorted (None
    when ``vocab`` names a value generator rather than a word list)."""
    name = vocab.strip().lower()
    if name in ("airport_code", "airport_codes"):
        return sorted(airport_city())
    if vocab_file_exists(name):
        return sorted(set(load_vocab(name)))
    return None


def key_problem(edef: EntityDef, key: object) -> str | None:
    """Why ``key`` cannot be an id of ``edef`` (None when it can)."""
    if edef.int_key:
        if isinstance(key, int) and not isinstance(key, bool):
            return None
        return f"{edef.name} ids are integers, got {key!r}"
    if isinstance(key, str) and key:
        return None
    return f"{edef.name} ids are non-empty strings, got {key!r}"


def key_from_json(int_key: bool, text: str) -> Key:
    """The id a JSON object key names: object keys are strings, so int id 3 is ``"3"``.

    Raises ValueError for a key that is not the canonical text of an int.
    """
    if not int_key:
        return text
    n = int(text)
    if str(n) != text:
        raise ValueError(f"{text!r} is not an integer id")
    return n


def next_counter(edef: EntityDef, keys: Iterable[Key], counter: int) -> int:
    """The number the next ``create`` of ``edef`` uses: the table's counter, and for int
    keys never below the largest id + 1 (an imported state may carry a counter that is
    behind its rows, or none that fits ids given by the data)."""
    if not edef.int_key:
        return counter
    top = max((k for k in keys if isinstance(k, int)), default=0)
    return max(counter, top + 1)


def explicit_key(edef: EntityDef, key: object, table: Collection[Key]) -> Key:
    """The id a create that names its key gives the new row: ``key`` itself. An id of
    the wrong type, an empty one, or one the table already has fails the call (kind
    ``exists`` for a taken id)."""
    from graphgen.errors import ToolError

    why = key_problem(edef, key)
    if why is not None:
        raise ToolError(why, kind="bad_args")
    assert isinstance(key, (int, str))
    if key in table:
        raise ToolError(f"{edef.name} {key!r} already exists", kind="exists")
    return key


def key_order(k: Key) -> tuple[int, int, str]:
    """Sort key of ids: int ids in number order, then strings in text order (so a mixed
    collection, such as the seeds of a slice, sorts without a TypeError)."""
    return (0, k, "") if isinstance(k, int) else (1, 0, k)
