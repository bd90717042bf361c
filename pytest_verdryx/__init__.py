"""The pytest face of verdryx: eval cases as items, and the session gate."""
