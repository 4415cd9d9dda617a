"""The acceptance gate's z3 half: the domain IR encoded symbolically, and the proofs.

* the z3 encoding of every IR expression and every tool call (the same IR the interpreter
  runs) over a bounded symbolic state: :mod:`graphgen.verify.terms` (term helpers),
  :mod:`~graphgen.verify.values` (computed values), :mod:`~graphgen.verify.universe` (the
  finite world and the value codec), :mod:`~graphgen.verify.symstate` (the symbolic state),
  :mod:`~graphgen.verify.evaluator` (expressions), :mod:`~graphgen.verify.calls` (tool
  calls), :mod:`~graphgen.verify.templates` (per-tool transitions built once) and
  :mod:`~graphgen.verify.concrete` (concrete chains, to test the encoding);
* :mod:`graphgen.verify.satcheck` — write tools whose precondition no state satisfies;
* :mod:`graphgen.verify.slicing` — the cone of influence: the rows any call chain can ever read;
* :mod:`graphgen.verify.bmc`     — bounded model checking over call chains whose arguments must be
  known to the agent (:mod:`graphgen.knowledge`), with witness extraction;
* :mod:`graphgen.verify.explicit` — the second engine: breadth-first search over concrete
  states, which answers the minimum and proofs 3 and 5 for small tasks;
* :mod:`graphgen.verify.lemmas`  — the domain's lemmas, proven by induction, for refusals;
* :mod:`graphgen.verify.proofs`  — the per-task proof obligations, collected into a certificate.
"""

# 0.2: enum members and recognition in the agent model; proof 5 up to the reference
# length, created ids up to renaming; the write_orders proof
# 0.3: small tasks' minimum and proofs 3 and 5 by explicit search (the detail says so)
# 0.4: proof 6 by the domain's lemmas, proven by induction (graphgen.verify.lemmas), and
# requested changes outside a field's bounds settled without z3
CHECKER_VERSION = "verify-z3-0.5"
