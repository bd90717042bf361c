"""The published JSON Schemas (eval sets, baseline files), read as package data."""
