"""Add-ons: contracts and the verification service, the typed grader, traces and SLOs,
events and OTLP. They plug in (graders by the `verdryx.graders` entry points, the rest by the
hooks of `verdryx_core.hooks`, through each `*_plugin.py` beside their folders); neither the
core nor a face imports them (docs/architecture.md)."""
