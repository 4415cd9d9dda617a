""" "Did you mean …?" hints for misspelt names (domains, tools, fields, entities, keys)."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable


def closest(word: str, choices: Iterable[str]) -> str | None:
    """The choice nearest to ``word`` when one is close enough to be a likely typo.

    >>> closest("stauts", ["status", "owner"])
    'status'
    >>> closest("zzz", ["status"]) is None
    True
    """
    pool = sorted(set(choices))
    got = difflib.get_close_matches(word, pool, n=1, cutoff=0.6)
    if not got:  # a case slip ("account" for "Account") is a typo too
        lowered = {c.lower(): c for c in pool}
        return lowered.get(word.lower())
    return got[0]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """``"; did you mean 'x'?"`` for the closest choice, or ``""``.

    >>> "unknown vocabulary 'emial'" + did_you_mean("emial", ["email", "city"])
    "unknown vocabulary 'emial'; did you mean 'email'?"
    """
    near = closest(word, choices)
    return f"; did you mean {near!r}?" if near is not None and near != word else ""


# Python syntax an expression may not use, in the words an author knows it by.
_SYNTAX_WORDS = {
    "JoinedStr": "f-strings",
    "FormattedValue": "f-string fields",
    "Set": "set literals {a, b}",
    "SetComp": "set comprehensions",
    "DictComp": "dict comprehensions",
    "ListComp": "list comprehensions",
    "GeneratorExp": "generator expressions here",
    "Slice": "slices x[a:b]",
    "Starred": "* unpacking",
    "Tuple": "tuples (a, b)",
    "Await": "await",
    "Yield": "yield",
    "YieldFrom": "yield from",
    "MatMult": "the @ operator",
    "Pow": "the ** operator",
    "BitAnd": "the & operator (write 'and')",
    "BitOr": "the | operator (write 'or')",
    "BitXor": "the ^ operator",
    "Invert": "the ~ operator",
    "LShift": "the << operator",
    "RShift": "the >> operator",
    "Bytes": "bytes literals",
}


def syntax_words(node_type: str) -> str:
    """What the Python syntax node ``node_type`` is called, as an author would say it.

    >>> syntax_words("JoinedStr")
    'f-strings are not supported in domain expressions'
    >>> syntax_words("MatchValue")
    'Python syntax MatchValue is not supported in domain expressions'
    """
    words = _SYNTAX_WORDS.get(node_type)
    if words is None:
        return f"Python syntax {node_type} is not supported in domain expressions"
    return f"{words} are not supported in domain expressions"


def effect_target_problem(target: ast.AST) -> str:
    """Why an effect cannot assign to ``target`` (only ``Entity[id].field`` is a place).

    >>> import ast
    >>> print(effect_target_problem(ast.parse("was = 1").body[0].targets[0]))
    ... # doctest: +NORMALIZE_WHITESPACE
    an effect assigns a table field (Entity[id].field = value), and 'was' is a plain
    name; to name a value for later lines, declare it in the tool's let: block
    (let: {was: "..."}), or bind a new row: was = Entity.create(...)
    """
    if isinstance(target, ast.Name):
        name = target.id
        return (
            f"an effect assigns a table field (Entity[id].field = value), and {name!r} is a "
            "plain name; to name a value for later lines, declare it in the tool's let: "
            f'block (let: {{{name}: "..."}}), or bind a new row: {name} = Entity.create(...)'
        )
    return "an effect assigns a table field: Entity[id].field = value"
