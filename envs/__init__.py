"""Compiled environments: a domain (plus, later, its accepted tasks) as standalone Python.

- :mod:`graphgen.envs.schemas`: strict OpenAI tool schemas of a domain's tools.
- :mod:`graphgen.envs.codegen`: the code backend of the IR; writes an importable package whose
  tools behave exactly like :mod:`graphgen.interp` (parts: :mod:`~graphgen.envs.naming`,
  :mod:`~graphgen.envs.printer`, :mod:`~graphgen.envs.layout`, :mod:`~graphgen.envs.emit`).
- :mod:`graphgen.envs.runtime` and :mod:`graphgen.envs.environment`: copied verbatim into every
  package (run-time support; the Gymnasium-shaped episode loop).
- :mod:`graphgen.envs.check`: :func:`check_env`, the interface every environment keeps.
- :mod:`graphgen.envs.gym`: a ``gymnasium.Env`` wrapper (the ``gym`` extra).
- :mod:`graphgen.envs.agent`: the agent loop and the baselines; :mod:`graphgen.envs.load`
  finds or builds a domain's package.
"""

from graphgen.envs.check import EnvCheckError, check_env

__all__ = ["EnvCheckError", "check_env"]
