"""CLI commands, one module each; see `verdryx_core.cli`."""
