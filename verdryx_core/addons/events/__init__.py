"""The two outbound wires: the agent-event NDJSON log and OTLP spans
(docs/events-and-otlp.md)."""
