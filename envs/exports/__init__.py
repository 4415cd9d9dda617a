"""Task sets in the formats other tools read: one module per format.

- :mod:`~graphgen.envs.exports.hf`: a Hugging Face dataset folder (parquet, one task per
  row, the manifests in a sidecar and the dataset card);
- :mod:`~graphgen.envs.exports.tau2`: τ²-bench's task and domain files;
- :mod:`~graphgen.envs.exports.sft`: oracle trajectories, run in the compiled
  environment, as chat messages with tools and as ShareGPT conversations;
- :mod:`~graphgen.envs.exports.mcp`: a domain's tools as an MCP tool list.

Each ``export_*`` function takes task sets already read (a manifest and its tasks) and
an output folder, and returns the files it wrote, in a fixed order; the same inputs
give the same bytes.
"""

from __future__ import annotations

from graphgen.errors import GraphgenError
from graphgen.tasks.model import Manifest, Task

__all__ = ["ExportError", "TaskSet"]

TaskSet = tuple[Manifest, list[Task]]
"""A task-set file as :func:`graphgen.tasks.taskset.read_taskset` returns it."""


class ExportError(GraphgenError):
    """A task set cannot be exported as asked; the message names the task at fault."""
