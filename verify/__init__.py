"""The acceptance gate's z3 half: the domain IR encoded symbolically, and the proofs.

* :mod:`graphgen.verify.encode`  — a bounded symbolic state over a finite universe and the z3
  encoding of every IR expression and every tool call (the same IR the interpreter runs);
* :mod:`graphgen.verify.slicing` — the cone of influence: the rows any call chain can ever read;
* :mod:`graphgen.verify.bmc`     — bounded model checking over call chains whose arguments must be
  known to the agent (:mod:`graphgen.knowledge`), with witness extraction;
* :mod:`graphgen.verify.proofs`  — the per-task proof obligations, collected into a certificate.
"""

CHECKER_VERSION = "verify-z3-0.1"
