"""Eval set files: the three formats, the published schema, the rules a schema cannot say,
and where each case starts in its file."""
