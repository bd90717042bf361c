"""The `typed` grader: a typed verdict from the typryx service (docs/typed-grader.md)."""
