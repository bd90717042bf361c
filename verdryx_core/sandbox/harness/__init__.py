"""The exec grader's harness: the tests run in one sandboxed process, the graded code in
another, and the tests reach the graded code only through a narrow proxy
(docs/workspaces-and-execution.md, "The harness").

These modules run inside the sandboxes, where verdryx itself is not installed: they import
the standard library and each other only, and this package's `__init__` imports nothing.
"""
