"""Task synthesis: expand the typed graph into candidate tasks and gate them by dry-run."""
