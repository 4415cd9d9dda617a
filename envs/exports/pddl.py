"""Task sets as PDDL: one ``domain.pddl`` and one ``problem-<task id>.pddl`` per task.

Only the *integer-free fragment* of the language is exported, because classical planners
(Fast Downward and most others) have no arithmetic. A tool belongs to the fragment when its
parameters are ids, enum members, strings or dates, and its ``requires``, effects and
return value use field reads, ``==``/``!=``, ``and``/``or``/``not``, list membership,
assignments of non-int fields and list ``append``/``remove``; ints, arithmetic,
aggregates, ``if``-expressions, ``create`` and ``delete`` put a tool outside (the domain
file lists those tools in a comment, with the reason). A task is exported when its
reference chain uses fragment tools only and its goal names non-int cells (or values an
answer must show); refusals are no planning problem and are skipped too.

The encoding mirrors the proofs' agent (``docs/verify.md``), so an optimal plan is as long
as the task's proven ``min_calls``:

* objects are the rows' keys (typed by entity) and the strings and dates that occur;
  enum members and the tools' literals are domain constants;
* a field is a predicate ``(f_<entity>__<field> ?row ?value)`` (a bool field has no value
  argument, a list field holds one atom per member); int fields are not modelled;
* knowledge is a fluent per sort, ``(known_<kind>__<name> ?v)``: true initially for the
  task's givens (and the enum members the instruction states word for word), made true
  by an output that shows the value at that sort; every action parameter must be known;
* ``(shown ?v)`` holds once any output showed ``?v`` (what an information task's answer
  needs); ``(seen ?a)`` is a recognition atom of a target (``x.f == v`` in its
  description) shown by an output, and a write may name a target only once its atoms are
  seen;
* a tool is an action whose precondition is its ``requires`` and whose effects are its
  effects plus what its return value reveals (conditional effects over the rows a
  comprehension returns; a row the tool writes shows its new values).

Names are encoded injectively into PDDL's case-insensitive alphabet: ``[a-z0-9]`` stay,
an upper-case letter becomes ``_`` and the lower-case letter, any other character
``-<hex code point>-``; a prefix per kind (``k_`` ids, ``s_`` strings, ``d_`` dates,
``m_`` enum members) keeps every name starting with a letter and kinds apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphgen import ir
from graphgen.domain import Domain, ToolDef
from graphgen.envs.exports import TaskSet
from graphgen.knowledge import Sort, param_sort, parse_sort
from graphgen.state import State
from graphgen.tasks.model import Task
from graphgen.types import PRIMS, EnumT, ListT, RecordT, RefT, RowT, Ty
from graphgen.verify.bmc import comp_filter_params, shown_sorts, sort_type
from graphgen.verify.proofs import agent_givens, recognitions

__all__ = ["Outside", "PddlExport", "encode_name", "export_pddl", "pddl_domain", "pddl_problem"]

MAX_ATOMS = 3
"""Recognition atoms per target the encoding has slots for."""

STR, DATE, BOOL = PRIMS["str"], PRIMS["date"], PRIMS["bool"]


class Outside(Exception):
    """A tool or task is outside the integer-free fragment; the message says why."""


def encode_name(text: str) -> str:
    """``text`` as the tail of a PDDL name, injectively (PDDL names ignore case).

    >>> encode_name("Grace O'Neil")
    '_grace-20-_o-27-_neil'
    """
    out = []
    for ch in text:
        if "a" <= ch <= "z" or "0" <= ch <= "9":
            out.append(ch)
        elif "A" <= ch <= "Z":
            out.append("_" + ch.lower())
        else:
            out.append(f"-{ord(ch):x}-")
    return "".join(out)


def _ident(name: str) -> str:
    """A domain identifier (entity, field, tool, enum, domain name): identifiers are
    ASCII words, so lower case and ``.`` → ``-`` keep them readable."""
    return name.lower().replace(".", "-")


def type_name(t: Ty) -> str:
    """The PDDL type of values of ``t`` (ids, enum members, strings, dates)."""
    if isinstance(t, RefT):
        return f"e_{_ident(t.entity)}"
    if isinstance(t, EnumT):
        return f"n_{_ident(t.name)}"
    if t == STR:
        return "t_str"
    if t == DATE:
        return "t_date"
    raise Outside(f"values of type {t.show()} are not objects")


def obj_name(t: Ty, value: Any) -> str:
    """The PDDL object (or constant) naming ``value`` of type ``t``."""
    if isinstance(t, RefT):
        return f"k_{_ident(t.entity)}__{encode_name(str(value))}"
    if isinstance(t, EnumT):
        return f"m_{_ident(t.name)}__{encode_name(str(value))}"
    if t == STR and isinstance(value, str):
        return f"s_{encode_name(value)}"
    if t == DATE and isinstance(value, str):
        return f"d_{encode_name(value)}"
    raise Outside(f"value {value!r} of type {t.show()} is not an object")


def field_pred(entity: str, f: str) -> str:
    return f"f_{_ident(entity)}__{_ident(f)}"


def known_pred(s: Sort) -> str:
    return f"known_{s.kind}__{_ident(s.name)}"


def _objectable(t: Ty) -> bool:
    return isinstance(t, RefT | EnumT) or t in (STR, DATE)


# ------------------------------------------------------------------ expressions


@dataclass
class _V:
    """A value: ``term`` once the ``vars`` are bound so that the ``conds`` hold."""

    vars: list[tuple[str, str]]
    conds: list[str]
    term: str


def _conj(parts: Sequence[str]) -> str:
    parts = [p for p in parts if p != "(and)"]
    if not parts:
        return "(and)"
    if len(parts) == 1:
        return parts[0]
    return "(and " + " ".join(parts) + ")"


def _exists(vars_: Sequence[tuple[str, str]], body: str) -> str:
    if not vars_:
        return body
    return f"(exists ({' '.join(f'{v} - {t}' for v, t in vars_)}) {body})"


def _wrap(vars_: Sequence[tuple[str, str]], conds: Sequence[str], eff: str) -> str:
    """``eff`` for every binding of ``vars_`` satisfying ``conds`` (a conditional effect)."""
    c = _conj(conds)
    inner = eff if c == "(and)" else f"(when {c} {eff})"
    if not vars_:
        return inner
    return f"(forall ({' '.join(f'{v} - {t}' for v, t in vars_)}) {inner})"


@dataclass
class _Write:
    key: str
    op: str  # "=", "append", "remove"
    value: _V


class _Tool:
    """One tool compiled to a PDDL action (raises :class:`Outside` when it is not in the
    fragment)."""

    def __init__(self, ex: _Domain, tool: ToolDef) -> None:
        self.ex = ex
        self.domain = ex.domain
        self.tool = tool
        self.n = 0
        self.env: dict[str, str] = {}
        self.params: list[tuple[str, str]] = []
        self.pre: list[str] = []
        for p in tool.params.values():
            if not _objectable(p.ty):
                raise Outside(f"parameter {p.name!r} is of type {p.ty.show()}")
            v = f"?{_ident(p.name)}"
            self.env[p.name] = v
            self.params.append((v, type_name(p.ty)))
            self.pre.append(f"({known_pred(param_sort(p))} {v})")
            if tool.is_write and isinstance(p.ty, RefT):
                self.pre.append(
                    f"(or (not (target {v})) (exists (?a1 ?a2 ?a3 - t_atom) "
                    f"(and (slots {v} ?a1 ?a2 ?a3) (seen ?a1) (seen ?a2) (seen ?a3))))"
                )
        for chk in tool.requires:
            self.pre.append(self.cond(chk.expr))
        self.written: dict[tuple[str, str], _Write] = {}
        self.effects: list[str] = []
        for st in tool.effects:
            self.effect(st.effect)
        if tool.returns is not None:
            rty = tool.return_ty
            assert rty is not None
            self.reveal(tool.returns, rty, self.env, [], [])

    def fresh(self, t: str) -> tuple[str, str]:
        self.n += 1
        return (f"?v{self.n}", t)

    # values and conditions (on the state before the call)

    def val(self, e: ir.Expr, env: dict[str, str]) -> _V:
        match e:
            case ir.Lit(value=v, ty=t):
                name = obj_name(t, v)
                self.ex.constants.add((name, type_name(t)))
                return _V([], [], name)
            case ir.Var(name=n, ty=t):
                if n not in env or not _objectable(t):
                    raise Outside(f"variable {n!r} of type {t.show()}")
                return _V([], [], env[n])
            case ir.FieldOf(entity=ent, key=k, field=f, ty=t):
                kv = self.val(k, env)
                if f == self.domain.entities[ent].key:
                    return kv
                self.reads(ent, f)
                if not _objectable(t):
                    raise Outside(f"{ent}.{f} of type {t.show()} read as a value")
                fv = self.fresh(type_name(t))
                return _V(
                    [*kv.vars, fv], [*kv.conds, f"({field_pred(ent, f)} {kv.term} {fv[0]})"], fv[0]
                )
            case _:
                raise Outside(f"expression {type(e).__name__} ({e.ty.show()}) as a value")

    def reads(self, ent: str, f: str) -> None:
        if (ent, f) in getattr(self, "written", {}):
            raise Outside(f"{ent}.{f} is read after the tool writes it")

    def cond(self, e: ir.Expr, env: dict[str, str] | None = None) -> str:
        env = self.env if env is None else env
        match e:
            case ir.Lit(value=v) if isinstance(v, bool):
                return "(and)" if v else "(or)"
            case ir.BoolOp(op=op, values=vs):
                return f"({op} " + " ".join(self.cond(x, env) for x in vs) + ")"
            case ir.Not(operand=x):
                return f"(not {self.cond(x, env)})"
            case ir.FieldOf(entity=ent, key=k, field=f, ty=t) if t == BOOL:
                kv = self.val(k, env)
                self.reads(ent, f)
                return _exists(kv.vars, _conj([*kv.conds, f"({field_pred(ent, f)} {kv.term})"]))
            case ir.Exists(key=k):
                kv = self.val(k, env)
                return _exists(kv.vars, _conj(kv.conds))
            case ir.Compare(op=op, left=a, right=b) if op in ("==", "!="):
                if a.ty == BOOL or b.ty == BOOL:
                    ca, cb = self.cond(a, env), self.cond(b, env)
                    same = f"(or (and {ca} {cb}) (and (not {ca}) (not {cb})))"
                    return same if op == "==" else f"(not {same})"
                for lhs, rhs in ((a, b), (b, a)):
                    # x.f == term: one atom, no quantifier (planners ground it directly)
                    if op == "==" and isinstance(lhs, ir.FieldOf):
                        yv = self.val(rhs, env)
                        edef = self.domain.entities[lhs.entity]
                        if not yv.vars and lhs.field != edef.key and not isinstance(lhs.ty, ListT):
                            kv = self.val(lhs.key, env)
                            self.reads(lhs.entity, lhs.field)
                            atom = f"({field_pred(lhs.entity, lhs.field)} {kv.term} {yv.term})"
                            return _exists(kv.vars, _conj([*kv.conds, atom]))
                va, vb = self.val(a, env), self.val(b, env)
                test = f"(= {va.term} {vb.term})"
                if op == "!=":
                    test = f"(not {test})"
                return _exists(va.vars + vb.vars, _conj(va.conds + vb.conds + [test]))
            case ir.Contains(item=item, container=c, negated=neg):
                iv = self.val(item, env)
                if isinstance(c, ir.FieldOf) and isinstance(c.ty, ListT):
                    kv = self.val(c.key, env)
                    self.reads(c.entity, c.field)
                    atom = f"({field_pred(c.entity, c.field)} {kv.term} {iv.term})"
                    body = _exists(iv.vars + kv.vars, _conj(iv.conds + kv.conds + [atom]))
                elif isinstance(c, ir.ListLit):
                    alts = []
                    for x in c.items:
                        xv = self.val(x, env)
                        alts.append(
                            _exists(
                                iv.vars + xv.vars,
                                _conj(iv.conds + xv.conds + [f"(= {iv.term} {xv.term})"]),
                            )
                        )
                    body = "(or " + " ".join(alts) + ")" if alts else "(or)"
                else:
                    raise Outside(f"membership in a {type(c).__name__}")
                return f"(not {body})" if neg else body
            case _:
                raise Outside(f"condition {type(e).__name__}")

    # effects

    def effect(self, eff: ir.Effect) -> None:
        match eff:
            case ir.Assign(entity=ent, key=k, field=f, op=op, value=v):
                fd = self.domain.entities[ent].fields[f]
                if op != "=" or not (_objectable(fd.ty) or fd.ty == BOOL):
                    raise Outside(f"assignment {op} to {ent}.{f} ({fd.ty.show()})")
                kv = self.val(k, self.env)
                if kv.vars:
                    raise Outside(f"a write to {ent}.{f} through another row")
                if (ent, f) in self.written:
                    raise Outside(f"two writes to {ent}.{f}")
                pred = field_pred(ent, f)
                if fd.ty == BOOL:
                    c = self.cond(v)
                    self.effects.append(f"(when {c} ({pred} {kv.term}))")
                    self.effects.append(f"(when (not {c}) (not ({pred} {kv.term})))")
                    self.written[(ent, f)] = _Write(kv.term, "=", _V([], [c], "true"))
                    return
                vv = self.val(v, self.env)
                old = self.fresh(type_name(fd.ty))
                self.effects.append(
                    _wrap(
                        [old],
                        [f"({pred} {kv.term} {old[0]})"],
                        f"(not ({pred} {kv.term} {old[0]}))",
                    )
                )
                self.effects.append(_wrap(vv.vars, vv.conds, f"({pred} {kv.term} {vv.term})"))
                self.written[(ent, f)] = _Write(kv.term, "=", vv)
            case ir.ListEdit(entity=ent, key=k, field=f, op=op, value=v):
                fd = self.domain.entities[ent].fields[f]
                assert isinstance(fd.ty, ListT)
                if not _objectable(fd.ty.elem):
                    raise Outside(f"list {ent}.{f} of {fd.ty.elem.show()}")
                kv, vv = self.val(k, self.env), self.val(v, self.env)
                if kv.vars or (ent, f) in self.written:
                    raise Outside(f"a list edit of {ent}.{f} this encoding cannot order")
                atom = f"({field_pred(ent, f)} {kv.term} {vv.term})"
                self.effects.append(
                    _wrap(vv.vars, vv.conds, atom if op == "append" else f"(not {atom})")
                )
                self.written[(ent, f)] = _Write(kv.term, op, vv)
            case ir.Create() | ir.Delete():
                raise Outside(f"{type(eff).__name__.lower()} of {eff.entity} rows")
            case _:
                raise Outside(f"effect {type(eff).__name__}")

    # what the return value reveals (on the state after the call)

    def post(self, ent: str, f: str, row: str) -> list[_V]:
        """The value(s) of ``ent.f`` of ``row`` after the call, as alternatives."""
        fd = self.domain.entities[ent].fields[f]
        pred = field_pred(ent, f)
        old = self.fresh(type_name(fd.ty))
        before = _V([old], [f"({pred} {row} {old[0]})"], old[0])
        w = self.written.get((ent, f))
        if w is None:
            return [before]
        new = _V(w.value.vars, [*w.value.conds, f"(= {row} {w.key})"], w.value.term)
        before.conds.append(f"(not (= {row} {w.key}))")
        return [new, before]

    def post_members(self, ent: str, f: str, row: str, elem: str) -> list[_V]:
        """The members of list ``ent.f`` of ``row`` after the call, as alternatives."""
        pred = field_pred(ent, f)
        m = self.fresh(elem)
        w = self.written.get((ent, f))
        if w is None:
            return [_V([m], [f"({pred} {row} {m[0]})"], m[0])]
        same = f"(and (= {row} {w.key}) (= {m[0]} {w.value.term}))"
        keep = _V([*list(w.value.vars), m], [*w.value.conds, f"({pred} {row} {m[0]})"], m[0])
        if w.op == "append":
            return [keep, _V(w.value.vars, [*w.value.conds, f"(= {row} {w.key})"], w.value.term)]
        keep.conds.append(f"(not {same})")
        return [keep]

    def know(
        self, sorts: Iterable[Sort], v: _V, vars_: list[tuple[str, str]], conds: list[str]
    ) -> None:
        for s in sorts:
            if s in self.ex.needed:
                self.effects.append(
                    _wrap(vars_ + v.vars, conds + v.conds, f"({known_pred(s)} {v.term})")
                )
            if s.kind == "field" and s in self.ex.atom_sorts:
                a = ("?a", "t_atom")
                self.effects.append(
                    _wrap(
                        vars_ + v.vars + [a],
                        conds + v.conds + [f"({self.ex.atom_pred(s)} ?a {v.term})"],
                        "(seen ?a)",
                    )
                )

    def show(self, v: _V, vars_: list[tuple[str, str]], conds: list[str]) -> None:
        self.effects.append(_wrap(vars_ + v.vars, conds + v.conds, f"(shown {v.term})"))

    def reveal(
        self,
        e: ir.Expr | None,
        t: Ty,
        env: dict[str, str],
        vars_: list[tuple[str, str]],
        conds: list[str],
    ) -> None:
        """The mirror of :func:`graphgen.verify.bmc.reveal_sites` (and of the output's
        leaves for ``shown``), as effects guarded by ``conds`` over ``vars_``."""
        if t == PRIMS["int"] or t == BOOL:
            return
        if isinstance(e, ir.FieldOf) and not isinstance(t, ListT):
            kv = self.val(e.key, env)
            if e.field == self.domain.entities[e.entity].key:
                self.know([Sort("key", e.entity)], kv, vars_, conds)
                self.show(kv, vars_, conds)
                return
            for alt in self.post(e.entity, e.field, kv.term):
                v = _V(kv.vars + alt.vars, kv.conds + alt.conds, alt.term)
                self.know(shown_sorts(self.domain, e.entity, e.field), v, vars_, conds)
                self.show(v, vars_, conds)
            return
        if isinstance(t, ListT):
            if isinstance(e, ir.Comp):
                x = self.fresh(type_name(RefT(e.entity)))
                inner = dict(env)
                inner[e.var] = x[0]
                c = [] if e.cond is None else [self.cond_post(e.cond, inner)]
                self.reveal(e.proj, t.elem, inner, [*vars_, x], conds + c)
                self.search(e, x, inner, vars_, conds)
                return
            if isinstance(e, ir.ListLit):
                for item in e.items:
                    self.reveal(item, t.elem, env, vars_, conds)
                return
            if isinstance(e, ir.FieldOf) and _objectable(t.elem):
                kv = self.val(e.key, env)
                for alt in self.post_members(e.entity, e.field, kv.term, type_name(t.elem)):
                    v = _V(kv.vars + alt.vars, kv.conds + alt.conds, alt.term)
                    self.value_sorts(t.elem, v, vars_, conds)
                return
            raise Outside(f"a list output {type(e).__name__}")
        if isinstance(t, RowT):
            if isinstance(e, ir.RowOf):
                kv = self.val(e.key, env)
            elif isinstance(e, ir.Var) and e.name in env:
                kv = _V([], [], env[e.name])
            else:
                raise Outside(f"a row output {type(e).__name__}")
            self.know([Sort("key", t.entity)], kv, vars_, conds)
            self.show(kv, vars_, conds)
            edef = self.domain.entities[t.entity]
            for name, fd in edef.fields.items():
                if isinstance(fd.ty, ListT):
                    if _objectable(fd.ty.elem):
                        for alt in self.post_members(
                            t.entity, name, kv.term, type_name(fd.ty.elem)
                        ):
                            v = _V(kv.vars + alt.vars, kv.conds + alt.conds, alt.term)
                            if isinstance(fd.ty.elem, RefT):
                                self.know([Sort("key", fd.ty.elem.entity)], v, vars_, conds)
                            self.show(v, vars_, conds)
                elif _objectable(fd.ty):
                    for alt in self.post(t.entity, name, kv.term):
                        v = _V(kv.vars + alt.vars, kv.conds + alt.conds, alt.term)
                        self.know(shown_sorts(self.domain, t.entity, name), v, vars_, conds)
                        self.show(v, vars_, conds)
            return
        if isinstance(t, RecordT):
            if not isinstance(e, ir.DictLit):
                raise Outside("a record output that is not a literal")
            for item in e.values:
                self.reveal(item, item.ty, env, vars_, conds)
            return
        if e is None:
            raise Outside("an output without its expression")
        v = self.val(e, env)
        self.value_sorts(t, v, vars_, conds)

    def value_sorts(self, t: Ty, v: _V, vars_: list[tuple[str, str]], conds: list[str]) -> None:
        if isinstance(t, RefT):
            self.know([Sort("key", t.entity)], v, vars_, conds)
        elif isinstance(t, EnumT):
            self.know([Sort("enum", t.name)], v, vars_, conds)
        self.show(v, vars_, conds)

    def cond_post(self, e: ir.Expr, env: dict[str, str]) -> str:
        """A comprehension's filter in a return value: on the state after the call, so
        it may not read a field the tool writes."""
        saved, self.written = self.written, {}
        try:
            for ent, f in saved:
                if _reads_field(e, ent, f):
                    raise Outside(f"an output filtered on {ent}.{f}, which the tool writes")
            return self.cond(e, env)
        finally:
            self.written = saved

    def search(
        self,
        e: ir.Comp,
        x: tuple[str, str],
        env: dict[str, str],
        vars_: list[tuple[str, str]],
        conds: list[str],
    ) -> None:
        """The mirror of :func:`graphgen.verify.bmc.search_sites`: a non-empty search
        filtered on ``x.f == p`` shows ``p`` at ``field:E.f`` (recognition only)."""
        for ef, p in comp_filter_params(e):
            s = Sort("field", ef)
            if p in self.tool.params and s in self.ex.atom_sorts:
                assert e.cond is not None  # it has the pair's conjunct
                c = self.cond_post(e.cond, env)
                self.effects.append(
                    _wrap(
                        [*vars_, x, ("?a", "t_atom")],
                        [*conds, c, f"({self.ex.atom_pred(s)} ?a {self.env[p]})"],
                        "(seen ?a)",
                    )
                )

    def action(self) -> str:
        params = " ".join(f"{v} - {t}" for v, t in self.params)
        eff = _conj(self.effects) if self.effects else "(and)"
        if len(self.effects) == 1:
            eff = f"(and {eff})"
        return (
            f"  (:action {_ident(self.tool.name)}\n"
            f"    :parameters ({params})\n"
            f"    :precondition {_conj(self.pre)}\n"
            f"    :effect {eff})\n"
        )


def _reads_field(e: ir.Expr, ent: str, f: str) -> bool:
    """Does ``e`` read ``ent.f`` (a row read reads every field)?"""
    found = False

    def walk(x: Any) -> None:
        nonlocal found
        if isinstance(x, ir.FieldOf) and x.entity == ent and x.field == f:
            found = True
        if isinstance(x, ir.RowOf) and x.entity == ent:
            found = True
        if isinstance(x, ir.ExprNode):
            for v in vars(x).values():
                if isinstance(v, ir.ExprNode):
                    walk(v)
                elif isinstance(v, tuple):
                    for y in v:
                        if isinstance(y, ir.ExprNode):
                            walk(y)

    walk(e)
    return found


# ------------------------------------------------------------------ the domain


@dataclass
class _Domain:
    domain: Domain
    needed: set[Sort] = field(default_factory=set)
    atom_sorts: set[Sort] = field(default_factory=set)
    constants: set[tuple[str, str]] = field(default_factory=set)
    tools: dict[str, _Tool] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def atom_pred(self, s: Sort) -> str:
        return f"atom_{_ident(s.name)}"

    def sort_type(self, s: Sort) -> str:
        t = sort_type(self.domain, s)
        if t is None or not _objectable(t):
            raise Outside(f"sort {s} has no object type")
        return type_name(t)


def _build(domain: Domain) -> _Domain:
    ex = _Domain(domain)
    # the tools whose parameters can be objects: their sorts are the knowledge that matters
    candidates = [
        t for t in domain.tools.values() if all(_objectable(p.ty) for p in t.params.values())
    ]
    for t in domain.tools.values():
        if t not in candidates:
            bad = next(p for p in t.params.values() if not _objectable(p.ty))
            ex.skipped[t.name] = f"parameter {bad.name!r} is of type {bad.ty.show()}"
    # recognition can ask for any scalar non-int field of an entity
    for ent, edef in domain.entities.items():
        for f, fd in edef.fields.items():
            if _objectable(fd.ty):
                ex.atom_sorts.add(Sort("field", f"{ent}.{f}"))
    for _ in range(len(domain.tools) + 1):  # a fixpoint: dropping a tool drops its sorts
        ex.needed = {param_sort(p) for t in candidates for p in t.params.values()}
        ex.tools = {}
        ex.constants = set()
        kept = []
        for t in candidates:
            try:
                ex.tools[t.name] = _Tool(ex, t)
                kept.append(t)
            except Outside as exc:
                ex.skipped[t.name] = str(exc)
        if len(kept) == len(candidates):
            break
        candidates = kept
    for _name, et in sorted(_enums(domain).items()):
        for m in et.values:
            ex.constants.add((obj_name(et, m), type_name(et)))
    ex.constants.add(("atom_none", "t_atom"))
    return ex


def _enums(domain: Domain) -> dict[str, EnumT]:
    out = dict(domain.enums)
    for edef in domain.entities.values():
        for fd in edef.fields.values():
            if isinstance(fd.ty, EnumT):
                out.setdefault(fd.ty.name, fd.ty)
    for tool in domain.tools.values():
        for p in tool.params.values():
            if isinstance(p.ty, EnumT):
                out.setdefault(p.ty.name, p.ty)
    return out


def _types(domain: Domain) -> list[str]:
    out = [type_name(RefT(e)) for e in domain.entities]
    out += [type_name(t) for _, t in sorted(_enums(domain).items())]
    return [*out, "t_str", "t_date", "t_atom"]


def pddl_domain(domain: Domain) -> str:
    """The PDDL domain of ``domain``'s integer-free fragment (the tools outside it are
    listed in a comment with the reason)."""
    ex = _build(domain)
    return _domain_text(ex)


def _domain_text(ex: _Domain) -> str:
    domain = ex.domain
    lines = [f"; graphgen domain {domain.name!r}: the integer-free fragment as PDDL"]
    if ex.skipped:
        lines.append("; tools outside the fragment (not exported):")
        for name, why in sorted(ex.skipped.items()):
            lines.append(f";   {name}: {why}")
    lines.append(f"(define (domain {_ident(domain.name)})")
    lines.append(
        "  (:requirements :strips :typing :equality :negative-preconditions"
        " :disjunctive-preconditions :existential-preconditions :conditional-effects)"
    )
    lines.append(f"  (:types {' '.join(_types(domain))} - object)")
    consts: dict[str, list[str]] = {}
    for name, t in sorted(ex.constants):
        consts.setdefault(t, []).append(name)
    lines.append("  (:constants")
    for t, names in sorted(consts.items()):
        lines.append(f"    {' '.join(names)} - {t}")
    lines.append("  )")
    preds = []
    for ent, edef in domain.entities.items():
        et = type_name(RefT(ent))
        for f, fd in edef.fields.items():
            if fd.ty == BOOL:
                preds.append(f"({field_pred(ent, f)} ?x - {et})")
            elif _objectable(fd.ty):
                preds.append(f"({field_pred(ent, f)} ?x - {et} ?v - {type_name(fd.ty)})")
            elif isinstance(fd.ty, ListT) and _objectable(fd.ty.elem):
                preds.append(f"({field_pred(ent, f)} ?x - {et} ?v - {type_name(fd.ty.elem)})")
    for s in sorted(ex.needed):
        preds.append(f"({known_pred(s)} ?v - {ex.sort_type(s)})")
    for s in sorted(ex.atom_sorts):
        preds.append(f"({ex.atom_pred(s)} ?a - t_atom ?v - {ex.sort_type(s)})")
    preds += [
        "(shown ?v - object)",
        "(seen ?a - t_atom)",
        "(target ?x - object)",
        "(slots ?x - object ?a1 ?a2 ?a3 - t_atom)",
    ]
    lines.append("  (:predicates")
    lines += [f"    {p}" for p in preds]
    lines.append("  )")
    text = "\n".join(lines) + "\n"
    for name in domain.tools:
        if name in ex.tools:
            text += ex.tools[name].action()
    return text + ")\n"


# ------------------------------------------------------------------ problems


def _typed_values(domain: Domain, state: State) -> Iterable[tuple[Ty, Any]]:
    for ent, rows in sorted(state.tables.items()):
        edef = domain.entities.get(ent)
        if edef is None:
            continue
        for key, row in sorted(rows.items()):
            yield RefT(ent), key
            for f, v in sorted(row.items()):
                fd = edef.fields.get(f)
                if fd is None:
                    continue
                if isinstance(fd.ty, ListT) and isinstance(v, list):
                    for x in v:
                        yield fd.ty.elem, x
                else:
                    yield fd.ty, v


def pddl_problem(domain: Domain, task: Task, ex: _Domain | None = None) -> str:
    """The PDDL problem of ``task``; raises :class:`Outside` (with the reason) for a task
    outside the fragment."""
    ex = _build(domain) if ex is None else ex
    if task.kind == "refusal":
        raise Outside("a refusal is not a planning problem")
    for c in task.chain:
        if c.tool not in ex.tools:
            raise Outside(f"its chain calls {c.tool} ({ex.skipped.get(c.tool, 'unknown tool')})")
    state = State.from_dict(task.initial_state)
    objects: set[tuple[str, str]] = set()
    init: set[str] = set()
    live = {e: set(rows) for e, rows in state.tables.items()}

    def obj(t: Ty, v: Any) -> str | None:
        if not _objectable(t) or v is None:
            return None
        if isinstance(t, RefT) and str(v) not in live.get(t.entity, set()):
            return None  # a dangling id names no row
        name = obj_name(t, v)
        if isinstance(t, EnumT):
            if v not in t.values:
                return None
            return name
        objects.add((name, type_name(t)))
        return name

    for t, v in _typed_values(domain, state):
        obj(t, v)
    for ent, rows in state.tables.items():
        edef = domain.entities.get(ent)
        if edef is None:
            continue
        for key, row in rows.items():
            k = obj(RefT(ent), key)
            for f, v in row.items():
                fd = edef.fields.get(f)
                if fd is None:
                    continue
                pred = field_pred(ent, f)
                if fd.ty == BOOL:
                    if v is True:
                        init.add(f"({pred} {k})")
                elif isinstance(fd.ty, ListT) and isinstance(v, list):
                    for x in v:
                        o = obj(fd.ty.elem, x)
                        if o is not None:
                            init.add(f"({pred} {k} {o})")
                else:
                    o = obj(fd.ty, v)
                    if o is not None:
                        init.add(f"({pred} {k} {o})")
    # knowledge: the givens at their sort (a stated value of an enum field states the member)
    for g in agent_givens(domain, task):
        s = parse_sort(g.sort)
        gt = sort_type(domain, s)
        if gt is None:
            continue
        o = obj(gt, g.value)
        if o is None:
            continue
        init.add(f"(shown {o})")  # the answer check counts a given as known
        sorts = [s]
        if isinstance(gt, EnumT):
            sorts.append(Sort("enum", gt.name))
        for x in sorts:
            if x in ex.needed:
                init.add(f"({known_pred(x)} {o})")
    # recognition: the targets a write may name only once their atoms were shown
    given_keys = {(g.sort, str(g.value)) for g in task.givens}
    atoms: set[str] = set()
    for n, r in enumerate(recognitions(domain, task.targets, state)):
        if (f"key:{r.entity}", r.key) in given_keys:
            continue
        k = obj(RefT(r.entity), r.key)
        if k is None:
            continue
        if len(r.atoms) > MAX_ATOMS:
            raise Outside(f"target {r.key} needs {len(r.atoms)} recognition atoms")
        slots = []
        for i, (ent, f, v) in enumerate(r.atoms):
            s = Sort("field", f"{ent}.{f}")
            ft = domain.entities[ent].fields[f].ty
            if s not in ex.atom_sorts:
                raise Outside(f"target {r.key} is recognised by {ent}.{f} ({ft.show()})")
            a = f"atom_{n}_{i}"
            atoms.add(a)
            o = obj(ft, v)
            if o is not None:
                init.add(f"({ex.atom_pred(s)} {a} {o})")
            slots.append(a)
        slots += ["atom_none"] * (MAX_ATOMS - len(slots))
        init.add(f"(target {k})")
        init.add(f"(slots {k} {' '.join(slots)})")
    init.add("(seen atom_none)")
    objects.update((a, "t_atom") for a in atoms)
    consts = {n for n, _ in ex.constants}
    goal = _goal(domain, task, obj, {n for n, _ in objects} | consts)
    by_type: dict[str, list[str]] = {}
    for name, tname in sorted(objects):
        if name not in consts:
            by_type.setdefault(tname, []).append(name)
    lines = [
        f"; graphgen task {task.id!r} (min_calls {task.min_calls})",
        f"(define (problem p_{encode_name(task.id)})",
        f"  (:domain {_ident(domain.name)})",
        "  (:objects",
    ]
    lines += [f"    {' '.join(names)} - {t}" for t, names in sorted(by_type.items())]
    lines.append("  )")
    lines.append("  (:init")
    lines += [f"    {a}" for a in sorted(init)]
    lines.append("  )")
    lines.append(f"  (:goal {goal})")
    return "\n".join(lines) + "\n)\n"


def _goal(domain: Domain, task: Task, obj: Any, objects: set[str]) -> str:
    parts: list[str] = []
    for c in task.goal.changes:
        edef = domain.entities.get(c.entity)
        if edef is None or c.field == "*" or c.field not in edef.fields:
            raise Outside(f"a change of whole {c.entity} rows")
        fd = edef.fields[c.field]
        k = obj(RefT(c.entity), c.key)
        pred = field_pred(c.entity, c.field)
        if k is None:
            raise Outside(f"the goal names {c.entity} {c.key}, which is no row")
        if fd.ty == BOOL:
            parts.append(f"({pred} {k})" if c.after else f"(not ({pred} {k}))")
        elif isinstance(fd.ty, ListT) and _objectable(fd.ty.elem):
            after = {obj(fd.ty.elem, x) for x in c.after or []}
            before = {obj(fd.ty.elem, x) for x in c.before or []}
            if None in after:
                raise Outside(f"the goal puts an unknown value into {c.entity}.{c.field}")
            parts += [f"({pred} {k} {m})" for m in sorted(after)]  # type: ignore[type-var]
            parts += [f"(not ({pred} {k} {m}))" for m in sorted(before - after) if m is not None]
        elif _objectable(fd.ty):
            o = obj(fd.ty, c.after)
            if o is None:
                raise Outside(f"the goal value {c.after!r} of {c.entity}.{c.field} is no object")
            parts.append(f"({pred} {k} {o})")
        else:
            raise Outside(f"the goal changes {c.entity}.{c.field} ({fd.ty.show()})")
    for a in task.goal.answer:
        # the objects this value can be: those the problem has (a disjunctive goal would
        # need axioms, which optimal planners' heuristics do not support)
        alts = sorted({n for t in _answer_types(domain) for n in [_try_obj(objects, t, a)] if n})
        if not alts:
            raise Outside(f"the answer {a!r} is no object (an int, a bool or a new value)")
        if len(alts) > 1:
            raise Outside(f"the answer {a!r} names {len(alts)} objects")
        parts.append(f"(shown {alts[0]})")
    if not parts:
        raise Outside("the goal is empty")
    return _conj(parts) if len(parts) > 1 else parts[0]


def _answer_types(domain: Domain) -> list[Ty]:
    return (
        [RefT(e) for e in domain.entities]
        + [t for _, t in sorted(_enums(domain).items())]
        + [STR, DATE]
    )


def _try_obj(objects: set[str], t: Ty, v: Any) -> str | None:
    if not isinstance(v, str):
        return None
    if isinstance(t, EnumT) and v not in t.values:
        return None
    name = obj_name(t, v)
    return name if name in objects else None


# ------------------------------------------------------------------ files


@dataclass
class PddlExport:
    """What :func:`export_pddl` wrote and skipped."""

    files: list[Path]
    exported: list[str]
    skipped: dict[str, str]
    tools_skipped: dict[str, dict[str, str]]


_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def export_pddl(
    sets: Sequence[TaskSet], domains: dict[str, Domain], output: str | Path
) -> PddlExport:
    """Write ``domain.pddl`` and ``problem-<task id>.pddl`` per exportable task under
    ``output`` (a sub-folder per domain when the sets hold several); tasks outside the
    fragment are skipped, and ``skipped.tsv`` lists them with the reason."""
    out = Path(output)
    files: list[Path] = []
    exported: list[str] = []
    skipped: dict[str, str] = {}
    tools_skipped: dict[str, dict[str, str]] = {}
    names = sorted({m.domain for m, _ in sets})
    for dname in names:
        domain = domains[dname]
        folder = out if len(names) == 1 else out / dname
        folder.mkdir(parents=True, exist_ok=True)
        ex = _build(domain)
        tools_skipped[dname] = dict(sorted(ex.skipped.items()))
        path = folder / "domain.pddl"
        path.write_text(_domain_text(ex), "utf-8")
        files.append(path)
        for m, tasks in sets:
            if m.domain != dname:
                continue
            for task in tasks:
                try:
                    text = pddl_problem(domain, task, ex)
                except Outside as exc:
                    skipped[task.id] = str(exc)
                    continue
                p = folder / f"problem-{_SAFE.sub('_', task.id)}.pddl"
                p.write_text(text, "utf-8")
                files.append(p)
                exported.append(task.id)
    path = out / "skipped.tsv"
    out.mkdir(parents=True, exist_ok=True)
    # tabs and newlines in a reason or id would break the rows: flatten them
    path.write_text("".join(f"{_flat(t)}\t{_flat(why)}\n" for t, why in skipped.items()), "utf-8")
    files.append(path)
    return PddlExport(files, exported, skipped, tools_skipped)


def _flat(text: str) -> str:
    return " ".join(text.split())
