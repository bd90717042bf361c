"""Add-ons: contracts and the verification service, the typed grader, traces and SLOs,
events and OTLP. They plug into the core (graders by entry point, their own tables); no
core module imports them (docs/architecture.md)."""
