"""Compiled environments: a domain (plus, later, its accepted tasks) as standalone Python.

- :mod:`graphgen.envs.schemas`: strict OpenAI tool schemas of a domain's tools.
- :mod:`graphgen.envs.codegen`: the code backend of the IR; writes an importable package whose
  tools behave exactly like :mod:`graphgen.interp`.
- :mod:`graphgen.envs.runtime`: the support module copied verbatim into every compiled package.
"""
